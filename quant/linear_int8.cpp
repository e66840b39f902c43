// The int8 Linear front-end (see linear_int8.h): checks, then the CPU path (min/max,
// quantize into padded rows, one int8 GEMM with the fused epilogue) or the CUDA path
// (the same three steps as kernels on Ember's stream, with no host synchronization:
// the activation's parameters are computed on the device from its min and max).
#include "quant/linear_int8.h"

#include <algorithm>
#include <cstring>

#include "ember_config.h"
#include "kernels/cpu/gemm_int8.h"
#include "kernels/cpu/quantize_int8.h"
#include "quant/qparams.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

#if EMBER_HAVE_CUDA
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/gemm_int8.h"
#include "kernels/cuda/runtime.h"
#include "tensor/cuda.h"
#endif

namespace ember::quant {

PackedLinearInt8 pack_linear_int8(const Tensor& weight, const Tensor& scales, const Tensor& bias) {
  PackedLinearInt8 p;
  p.out_features = weight.size(0);
  p.in_features = weight.size(1);
  p.per_channel = scales.numel() != 1 || p.out_features == 1;
  p.device = weight.device();
  const int64_t n = p.out_features, k = p.in_features;
  const Tensor w = weight.cpu().contiguous();
  p.row_sums = empty({n}, kInt32);
  p.scales = scales.to(kCPU, kFloat32).contiguous();
  if (bias.defined()) p.bias = bias.to(kCPU, kFloat32).contiguous();
  if (p.device.is_cuda()) {
    // CUDA reads whole 16-byte chunks of each row: pad rows with zero weights.
    const int64_t kp = (k + 15) / 16 * 16;
    Tensor padded = zeros({n, kp}, kInt8);
    int32_t* sums = p.row_sums.data_ptr<int32_t>();
    const int8_t* src = w.data_ptr<int8_t>();
    int8_t* dst = padded.data_ptr<int8_t>();
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(dst + j * kp, src + j * k, size_t(k));
      int32_t s = 0;
      for (int64_t q = 0; q < k; ++q) s += src[j * k + q];
      sums[j] = s;
    }
    p.packed = padded.to(p.device);
    p.row_sums = p.row_sums.to(p.device);
    p.scales = p.scales.to(p.device);
    if (p.bias.defined()) p.bias = p.bias.to(p.device);
    return p;
  }
  p.packed = empty({cpu::packed_int8_weights_bytes(n, k)}, kInt8);
  cpu::pack_int8_weights(n, k, w.data_ptr<int8_t>(), k, p.packed.data_ptr<int8_t>(), p.row_sums.data_ptr<int32_t>());
  return p;
}

namespace {

void check_input(const Tensor& x, const PackedLinearInt8& w, const char* op) {
  if (x.device().type() != w.device.type())
    throw DeviceError(msg("Expected object of device type ", device_type_name(w.device.type()),
                          " but got device type ", device_type_name(x.device().type()),
                          " for argument #1 'self' in call to ", op));
  // Same type but another GPU: the kernels would read the weights from the wrong device.
  if (x.device() != w.device)
    throw DeviceError(msg("expected device ", w.device.str(), " but got device ", x.device().str()));
  if (x.dtype() != kFloat32) throw DTypeError(msg(op, ": expected a float32 input, got ", x.dtype()));
  if (x.dim() < 1 || x.size(-1) != w.in_features) {
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
    throw ShapeError(msg("mat1 and mat2 shapes cannot be multiplied (", rows, "x", x.dim() < 1 ? 1 : x.size(-1),
                         " and ", w.in_features, "x", w.out_features, ")"));
  }
}

Tensor forward_cpu(const Tensor& x2, const PackedLinearInt8& w, const char* op) {
  const int64_t m = x2.size(0), k = w.in_features, n = w.out_features;
  Tensor y = empty({m, n}, kFloat32);
  if (m == 0) return y;
  const float* xp = x2.data_ptr<float>();
  const cpu::MinMax mm = cpu::min_max(xp, m * k);
  if (!mm.finite) throw ValueError(msg(op, ": the input holds inf or NaN, which cannot be quantized"));
  const QParams qp = choose_qparams(mm.min, mm.max, 0, 255, w.reduce_range);
  const int32_t qmax = w.reduce_range ? 127 : 255;
  const int64_t kp = cpu::int8_padded_k(k);
  Tensor xq = empty({m, kp}, kUInt8);
  cpu::quantize(xp, m, k, k, 1.0f / qp.scale, qp.zero_point, 0, qmax, kUInt8, xq.data_ptr(), kp, kp, 0);
  cpu::Int8Epilogue ep;
  ep.a_scale = qp.scale;
  ep.a_zero_point = qp.zero_point;
  ep.w_row_sums = w.row_sums.data_ptr<int32_t>();
  ep.w_scales = w.scales.data_ptr<float>();
  ep.per_channel = w.per_channel;
  ep.bias = w.bias.defined() ? w.bias.data_ptr<float>() : nullptr;
  cpu::gemm_int8(m, n, k, xq.data_ptr<uint8_t>(), kp, w.packed.data_ptr<int8_t>(), ep, y.data_ptr<float>(), n);
  return y;
}

#if EMBER_HAVE_CUDA
Tensor forward_cuda(const Tensor& x2, const PackedLinearInt8& w) {
  const int64_t m = x2.size(0), k = w.in_features, n = w.out_features;
  Tensor y = empty({m, n}, TensorOptions(kFloat32, x2.device()));
  if (m == 0) return y;
  const int device = x2.device().index();
  cuda::DeviceGuard guard(device);  // launches go to the input's device
  cudaStream_t stream = cuda::stream(device);
  cuda::ScratchBuffer work(cuda::linear_int8_workspace_bytes(m, n, k), device, stream);
  cuda::linear_int8_dynamic(m, n, k, x2.data_ptr<float>(), w.packed.data_ptr<int8_t>(),
                            w.row_sums.data_ptr<int32_t>(), w.scales.data_ptr<float>(), w.per_channel,
                            w.bias.defined() ? w.bias.data_ptr<float>() : nullptr, w.reduce_range, y.data_ptr<float>(),
                            work.get(), stream);
  return y;
}
#endif

}  // namespace

Tensor linear_int8_dynamic(const Tensor& x, const PackedLinearInt8& w, const char* op) {
  check_input(x, w, op);
  Shape out_shape = x.shape();
  out_shape.back() = w.out_features;
  // Rows of the input: every dimension but the last, flattened (so an in_features = 0 input still has rows).
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  if (x.device().is_meta()) return empty(out_shape, TensorOptions(kFloat32, x.device()));
  const Tensor x2 = x.contiguous().reshape({rows, w.in_features});
#if EMBER_HAVE_CUDA
  if (x.device().is_cuda()) return forward_cuda(x2, w).reshape(out_shape);
#endif
  if (!x.device().is_cpu()) throw_no_kernel(op, x);
  return forward_cpu(x2, w, op).reshape(out_shape);
}

}  // namespace ember::quant
