// 2-D convolution through cuDNN's legacy API (cudnnConvolutionForward, BackwardData,
// BackwardFilter, AddTensor), and the default entry points that choose between it
// and the native kernels (conv2d.h).
//
// Per call: descriptors for x, y, the filter and the convolution; cuDNN's heuristic
// list of algorithms (cudnnGet*Algorithm_v7), tried in its order until one runs:
// an algorithm whose workspace (at most kMaxWorkspaceBytes, from the caching
// allocator) cannot be had, or that cuDNN refuses at execution (v7 heuristics do
// offer some that then fail), passes to the next. float32 and float64 ask for FMA
// math only (no TF32, matching the CPU to float32 rounding); float16 and bfloat16 for
// tensor-core math with float32 accumulation, and no Winograd or FFT algorithm (they
// keep transformed tiles in the half type, an error the bounds in docs/numerics.md
// do not allow). One cuDNN handle per device, created on first use, used under the
// device's lock because its stream is per-handle state. Whatever cuDNN refuses (a
// descriptor, the algorithm query, every algorithm) runs the native kernels instead.
// A half-type forward with a bias convolves float32 copies and rounds once while
// adding the bias (see conv2d_forward_cudnn). The bias gradient is Ember's own
// deterministic reduction (conv2d_bias_grad), not cuDNN's deprecated BackwardBias.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ember_config.h"  // before the #if below: without it EMBER_HAVE_CUDNN reads as 0
#include "kernels/base/error.h"
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/gemm.h"

#if EMBER_HAVE_CUDNN
#include <climits>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "kernels/cuda/allocator.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#endif

namespace ember::cuda {

#if EMBER_HAVE_CUDNN
namespace {

constexpr size_t kMaxWorkspaceBytes = size_t(1) << 30;

struct DnnHandle {
  std::mutex lock;
  cudnnHandle_t handle = nullptr;
};

// Never destroyed, for the reason given for cuBLAS handles in blas.cpp.
DnnHandle& dnn_handle(int device) {
  static std::mutex table_lock;
  static std::vector<std::unique_ptr<DnnHandle>> table;
  std::lock_guard<std::mutex> guard(table_lock);
  if (device < 0) throw ValueError("cuDNN: invalid device index " + std::to_string(device));
  if (table.size() <= size_t(device)) table.resize(size_t(device) + 1);
  auto& slot = table[size_t(device)];
  if (!slot) {
    auto h = std::make_unique<DnnHandle>();
    DeviceScope on(device);
    EMBER_CUDA_CHECK(cudnnCreate(&h->handle));
    slot = std::move(h);
  }
  return *slot;
}

cudnnDataType_t data_type(DType dt) {
  switch (dt) {
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

// cuDNN takes int sizes; the whole tensors' element counts must fit too.
bool cudnn_can_take(const Conv2dShape& s) {
  const int64_t vals[] = {s.n, s.c_in, s.h, s.w, s.c_out, s.kh, s.kw, s.h_out, s.w_out,
                          s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dil_h, s.dil_w, s.groups,
                          s.n * s.c_in * s.h * s.w, s.n * s.c_out * s.h_out * s.w_out,
                          s.c_out * (s.c_in / std::max<int64_t>(s.groups, 1)) * s.kh * s.kw};
  for (int64_t v : vals)
    if (v < 0 || v > INT_MAX) return false;
  // Empty tensors: the native path handles them (cuDNN rejects zero sizes).
  return s.n > 0 && s.c_in > 0 && s.c_out > 0 && s.h_out > 0 && s.w_out > 0 && s.h > 0 && s.w > 0;
}

// One descriptor each, destroyed with its owner. Each is its own member of
// Descriptors, so that when a later create call throws, the ones already made are
// destroyed (members constructed so far are, a half-built object's body is not).
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { EMBER_CUDA_CHECK(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { EMBER_CUDA_CHECK(cudnnCreateFilterDescriptor(&d)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { EMBER_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&d)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

// Which math an algorithm may use.
enum class Math {
  fma,         // float32/float64 data: FMA only, never TF32 (float32 results to float32 rounding)
  tensor_ops,  // half-type data: tensor cores, float32 accumulation
  tf32_exact,  // float32 copies of half-type data: TF32 is exact on them (a half value
               // has 11 significant bits, a bfloat16 8, TF32 keeps 11), so tensor cores
               // may run on the data as it is; conversion down to float16 may not
               // (bfloat16's range), nor Winograd or FFT (their transformed values
               // are not half values).
};

// The math type the descriptor asks the heuristics for: DEFAULT allows TF32 on this
// GPU generation, FMA refuses it.
cudnnMathType_t descriptor_math(Math rule) {
  switch (rule) {
    case Math::fma: return CUDNN_FMA_MATH;
    case Math::tensor_ops: return CUDNN_TENSOR_OP_MATH;
    case Math::tf32_exact: return CUDNN_DEFAULT_MATH;
  }
  return CUDNN_FMA_MATH;
}

// Algorithms that compute in a transformed domain (Winograd, FFT).
bool transforms(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool transforms(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool transforms(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// Whether `rule` lets an algorithm of the heuristic list run, and with which math
// type (set on the descriptor before it runs).
template <class Perf>
bool accepts(Math rule, const Perf& p, cudnnMathType_t& math) {
  if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxWorkspaceBytes) return false;
  math = p.mathType;
  if (rule == Math::fma) {
    if (math != CUDNN_FMA_MATH && math != CUDNN_DEFAULT_MATH) return false;
    math = CUDNN_FMA_MATH;  // DEFAULT permits TF32 on this GPU; keep the algorithm but insist on FMA
    return true;
  }
  return math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && !transforms(p.algo);
}

// Runs `call(algo, workspace, bytes)` (a cuDNN execution, returning its status) for
// each algorithm of the heuristic list that `rule` accepts, in the list's order,
// until one succeeds. False when none did: the caller runs the native kernels.
// Only a refusal passes to the next algorithm: a BAD_PARAM or NOT_SUPPORTED status
// (cuDNN checks those before it launches anything, so nothing was written and the
// next one overwrites the whole output; a workspace too small for the math type set
// here is one) or cuDNN failing to allocate device memory itself. Any other status
// (an execution failure, often an earlier kernel's fault surfacing) raises, rather
// than falling back and blaming the native kernel's launch for it.
template <class Perf, class Call>
bool run_first_that_runs(Math rule, const Perf* perf, int count, cudnnConvolutionDescriptor_t conv, int device,
                         cudaStream_t stream, Call call) {
  for (int i = 0; i < count; ++i) {
    cudnnMathType_t math;
    if (!accepts(rule, perf[i], math)) continue;
    if (cudnnSetConvolutionMathType(conv, math) != CUDNN_STATUS_SUCCESS) continue;
    std::optional<ScratchBuffer> ws;
    try {
      ws.emplace(perf[i].memory, device, stream);
    } catch (const OutOfMemoryError&) {
      continue;  // a smaller workspace may come later in the list
    }
    const cudnnStatus_t st = call(perf[i].algo, ws->get(), perf[i].memory);
    if (st == CUDNN_STATUS_SUCCESS) return true;
    const int category = static_cast<int>(st) / 1000;  // cuDNN 9 groups statuses by thousands
    if (category != 2 && category != 3 && st != CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
      EMBER_CUDA_CHECK(st);
    cudaGetLastError();
  }
  return false;
}

// The descriptors of one convolution with data of type dt. `ok` is false when cuDNN
// refused to describe it (a cudnnSet* call failed): the caller then runs the native
// kernels, as for any shape cuDNN cannot take.
struct Descriptors {
  TensorDesc x_, y_, bias_;
  FilterDesc w_;
  ConvDesc conv_;
  cudnnTensorDescriptor_t x, y, bias;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  bool ok;

  Descriptors(DType dt, const Conv2dShape& s, Math rule)
      : x(x_.d), y(y_.d), bias(bias_.d), w(w_.d), conv(conv_.d), ok(describe(dt, s, rule)) {}

 private:
  bool describe(DType dt, const Conv2dShape& s, Math rule) {
    const cudnnDataType_t t = data_type(dt);
    const cudnnStatus_t st[] = {
        cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, t, int(s.n), int(s.c_in), int(s.h), int(s.w)),
        cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, t, int(s.n), int(s.c_out), int(s.h_out), int(s.w_out)),
        cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, t, 1, int(s.c_out), 1, 1),
        cudnnSetFilter4dDescriptor(w, t, CUDNN_TENSOR_NCHW, int(s.c_out), int(s.c_in / s.groups), int(s.kh),
                                   int(s.kw)),
        cudnnSetConvolution2dDescriptor(conv, int(s.pad_h), int(s.pad_w), int(s.stride_h), int(s.stride_w),
                                        int(s.dil_h), int(s.dil_w), CUDNN_CROSS_CORRELATION,
                                        dt == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
        cudnnSetConvolutionGroupCount(conv, int(s.groups)),
        cudnnSetConvolutionMathType(conv, descriptor_math(rule)),
    };
    for (cudnnStatus_t v : st)
      if (v != CUDNN_STATUS_SUCCESS) return false;
    return true;
  }
};

Math math_for(DType dt) { return is_half(dt) ? Math::tensor_ops : Math::fma; }

// alpha = 1 and beta = 0 or 1 in the scaling type cuDNN wants (double for float64).
struct Scalars {
  float f1 = 1.f, f0 = 0.f;
  double d1 = 1.0, d0 = 0.0;
  bool dbl;
  explicit Scalars(DType dt) : dbl(dt == DType::Float64) {}
  const void* one() const { return dbl ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return dbl ? static_cast<const void*>(&d0) : &f0; }
};

constexpr int kMaxAlgos = 16;

// y = conv(x, w) (+ bias, nullable) with data of type dt, or false without touching
// y when cuDNN cannot take it: descriptors refused, the algorithm query itself failed
// (cudnnGetConvolutionForwardAlgorithm_v7 returning an error rather than per-algorithm
// statuses), or no algorithm within the limits. The caller holds h's lock.
bool forward(cudnnHandle_t h, int device, DType dt, Math rule, const Conv2dShape& s, const void* x, const void* w,
             const void* bias, void* y, cudaStream_t stream) {
  Descriptors d(dt, s, rule);
  if (!d.ok) return false;
  cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
  int count = 0;
  if (cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, kMaxAlgos, &count, perf) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  const Scalars k(dt);
  if (!run_first_that_runs(rule, perf, count, d.conv, device, stream,
                           [&](cudnnConvolutionFwdAlgo_t algo, void* ws, size_t bytes) {
                             return cudnnConvolutionForward(h, k.one(), d.x, x, d.w, w, d.conv, algo, ws, bytes,
                                                            k.zero(), d.y, y);
                           }))
    return false;
  // float32 and float64 only (the caller handles the half types): y holds the sum
  // rounded to dt and the bias is added to it, one more rounding, as the native
  // GEMM's epilogue does with its float32 (float64) accumulator.
  if (bias) EMBER_CUDA_CHECK(cudnnAddTensor(h, k.one(), d.bias, bias, k.one(), d.y, y));
  return true;
}

}  // namespace

bool conv2d_have_cudnn() { return true; }

void conv2d_forward_cudnn(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                          const void* bias, void* y, cudaStream_t stream) {
  if (!is_floating(dt) || !cudnn_can_take(s)) return conv2d_forward_native(dt, s, x, weight, bias, y, stream);
  const int device = current_device_index();
  DnnHandle& h = dnn_handle(device);
  std::lock_guard<std::mutex> guard(h.lock);
  EMBER_CUDA_CHECK(cudnnSetStream(h.handle, stream));
  if (bias && is_half(dt)) {
    // Convolving in the half type and then adding the bias (cudnnAddTensor) rounds
    // twice, where the native path rounds once (its GEMM adds onto y pre-filled with
    // the bias, in float). cuDNN's legacy API takes no float32 output for half
    // inputs, and whether its alpha/beta blend happens before the rounding is not
    // documented for every algorithm; so convolve exact float32 copies into float32
    // and add the bias while rounding, in one kernel. It costs the copies (x, weight
    // and y in float32) and TF32 instead of fp16 tensor-core rates.
    const int64_t nx = s.n * s.c_in * s.h * s.w, nw = s.c_out * (s.c_in / s.groups) * s.kh * s.kw,
                  ny = s.n * s.c_out * s.h_out * s.w_out;
    ScratchBuffer x32(size_t(nx) * sizeof(float), device, stream), w32(size_t(nw) * sizeof(float), device, stream),
        y32(size_t(ny) * sizeof(float), device, stream);
    conv2d_widen(dt, nx, x, x32.as<float>(), stream);
    conv2d_widen(dt, nw, weight, w32.as<float>(), stream);
    if (!forward(h.handle, device, DType::Float32, Math::tf32_exact, s, x32.get(), w32.get(), nullptr, y32.get(),
                 stream))
      return conv2d_forward_native(dt, s, x, weight, bias, y, stream);
    conv2d_add_bias_round(dt, s, y32.as<float>(), bias, y, stream);
    return;
  }
  if (!forward(h.handle, device, dt, math_for(dt), s, x, weight, bias, y, stream))
    return conv2d_forward_native(dt, s, x, weight, bias, y, stream);
}

void conv2d_backward_input_cudnn(DType dt, const Conv2dShape& s, const void* grad_y,
                                 const void* weight, void* grad_x, cudaStream_t stream) {
  if (!is_floating(dt) || !cudnn_can_take(s))
    return conv2d_backward_input_native(dt, s, grad_y, weight, grad_x, stream);
  const int device = current_device_index();
  DnnHandle& h = dnn_handle(device);
  std::lock_guard<std::mutex> guard(h.lock);
  EMBER_CUDA_CHECK(cudnnSetStream(h.handle, stream));
  const Math rule = math_for(dt);
  Descriptors d(dt, s, rule);
  cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgos];
  int count = 0;
  const Scalars k(dt);
  // An error from the query itself (not just per-algorithm statuses) means cuDNN
  // cannot take this convolution: the native kernels run, as conv2d.h promises.
  if (!d.ok ||
      cudnnGetConvolutionBackwardDataAlgorithm_v7(h.handle, d.w, d.y, d.conv, d.x, kMaxAlgos, &count, perf) !=
          CUDNN_STATUS_SUCCESS ||
      !run_first_that_runs(rule, perf, count, d.conv, device, stream,
                           [&](cudnnConvolutionBwdDataAlgo_t algo, void* ws, size_t bytes) {
                             return cudnnConvolutionBackwardData(h.handle, k.one(), d.w, weight, d.y, grad_y, d.conv,
                                                                 algo, ws, bytes, k.zero(), d.x, grad_x);
                           }))
    conv2d_backward_input_native(dt, s, grad_y, weight, grad_x, stream);
}

void conv2d_backward_weight_cudnn(DType dt, const Conv2dShape& s, const void* grad_y,
                                  const void* x, void* grad_weight, void* grad_bias,
                                  cudaStream_t stream) {
  if (!is_floating(dt) || !cudnn_can_take(s))
    return conv2d_backward_weight_native(dt, s, grad_y, x, grad_weight, grad_bias, stream);
  const int device = current_device_index();
  DnnHandle& h = dnn_handle(device);
  std::lock_guard<std::mutex> guard(h.lock);
  EMBER_CUDA_CHECK(cudnnSetStream(h.handle, stream));
  const Math rule = math_for(dt);
  Descriptors d(dt, s, rule);
  cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgos];
  int count = 0;
  const Scalars k(dt);
  if (!d.ok ||
      cudnnGetConvolutionBackwardFilterAlgorithm_v7(h.handle, d.x, d.y, d.conv, d.w, kMaxAlgos, &count, perf) !=
          CUDNN_STATUS_SUCCESS ||
      !run_first_that_runs(rule, perf, count, d.conv, device, stream,
                           [&](cudnnConvolutionBwdFilterAlgo_t algo, void* ws, size_t bytes) {
                             return cudnnConvolutionBackwardFilter(h.handle, k.one(), d.x, x, d.y, grad_y, d.conv,
                                                                   algo, ws, bytes, k.zero(), d.w, grad_weight);
                           }))
    return conv2d_backward_weight_native(dt, s, grad_y, x, grad_weight, grad_bias, stream);
  // Ember's own reduction: deterministic, float accumulation for the half types, the
  // same sums as the native path (cuDNN's BackwardBias is deprecated and documents
  // neither).
  if (grad_bias) conv2d_bias_grad(dt, s, grad_y, grad_bias, stream);
}

#else  // no cuDNN in this build

bool conv2d_have_cudnn() { return false; }

[[noreturn]] static void no_cudnn() {
  throw NotImplementedError("conv2d: this build of Ember has no cuDNN");
}
void conv2d_forward_cudnn(DType, const Conv2dShape&, const void*, const void*, const void*, void*,
                          cudaStream_t) {
  no_cudnn();
}
void conv2d_backward_input_cudnn(DType, const Conv2dShape&, const void*, const void*, void*,
                                 cudaStream_t) {
  no_cudnn();
}
void conv2d_backward_weight_cudnn(DType, const Conv2dShape&, const void*, const void*, void*, void*,
                                  cudaStream_t) {
  no_cudnn();
}

#endif

// The default: the native kernels. Until 2026-12-04 every build compiled the no-cuDNN
// branch above (EMBER_HAVE_CUDNN was read before ember_config.h defined it), so the
// cuDNN path has never run on a GPU, while the native one passed the whole cuda suite
// on an H200; EMBER_CUDNN=1 (read once) opts in to cuDNN, in a build that has it and
// unless EMBER_KERNELS=native. The tests and the bench call the cuDNN functions by
// name, so the next GPU run checks them.
static bool use_cudnn() {
  static const bool opted_in = [] {
    const char* v = std::getenv("EMBER_CUDNN");
    return v && std::string(v) == "1";
  }();
  return opted_in && conv2d_have_cudnn() && kernel_choice() != KernelChoice::native;
}

// EMBER_CUDA_CONV=direct (read once) opts in to the direct kernels for the shapes they
// suit. Written after the one GPU run so far, they have not run on a GPU: the tests
// and the bench call them by name, so the next GPU run checks and times them.
static bool use_direct(const Conv2dShape& s) {
  static const bool opted_in = [] {
    const char* v = std::getenv("EMBER_CUDA_CONV");
    return v && std::string(v) == "direct";
  }();
  return opted_in && conv2d_direct_suits(s);
}

void conv2d_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y, cudaStream_t stream) {
  if (use_cudnn()) conv2d_forward_cudnn(dt, s, x, weight, bias, y, stream);
  else if (use_direct(s)) conv2d_forward_direct(dt, s, x, weight, bias, y, stream);
  else conv2d_forward_native(dt, s, x, weight, bias, y, stream);
}

void conv2d_backward_input(DType dt, const Conv2dShape& s, const void* grad_y, const void* weight,
                           void* grad_x, cudaStream_t stream) {
  if (use_cudnn()) conv2d_backward_input_cudnn(dt, s, grad_y, weight, grad_x, stream);
  else if (use_direct(s)) conv2d_backward_input_direct(dt, s, grad_y, weight, grad_x, stream);
  else conv2d_backward_input_native(dt, s, grad_y, weight, grad_x, stream);
}

void conv2d_backward_weight(DType dt, const Conv2dShape& s, const void* grad_y, const void* x,
                            void* grad_weight, void* grad_bias, cudaStream_t stream) {
  if (use_cudnn()) conv2d_backward_weight_cudnn(dt, s, grad_y, x, grad_weight, grad_bias, stream);
  else if (use_direct(s)) conv2d_backward_weight_direct(dt, s, grad_y, x, grad_weight, grad_bias, stream);
  else conv2d_backward_weight_native(dt, s, grad_y, x, grad_weight, grad_bias, stream);
}

}  // namespace ember::cuda
