// matmul with PyTorch's rules: 1-D x 1-D is a dot product, a 1-D operand is
// promoted to a matrix and the added dim removed afterwards, and leading (batch)
// dims broadcast. Operands reach the GEMM kernel through their strides, so
// transposed views cost no copy; batch dims are collapsed to one stride when the
// memory layout allows and copied otherwise.
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_integer.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember {
namespace {

[[noreturn]] void throw_mismatch(const Tensor& a, const Tensor& b) {
  const int64_t m = a.dim() >= 2 ? a.shape()[a.dim() - 2] : 1;
  throw ShapeError(msg("mat1 and mat2 shapes cannot be multiplied (", m, "x", a.shape().back(), " and ",
                       b.dim() >= 2 ? b.shape()[b.dim() - 2] : b.shape()[0], "x",
                       b.dim() >= 2 ? b.shape().back() : 1, ")"));
}

// (batch..., r, c) -> (B, r, c) as a view when the batch dims collapse to one
// stride, else as a contiguous copy.
Tensor as_3d(const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t r = t.shape()[nd - 2], c = t.shape()[nd - 1];
  int64_t batch = 1;
  std::vector<int64_t> dims;  // batch dims of size > 1, outer to inner
  for (int64_t i = 0; i < nd - 2; ++i) {
    batch *= t.shape()[i];
    if (t.shape()[i] != 1) dims.push_back(i);
  }
  bool collapsible = true;
  for (size_t j = 0; j + 1 < dims.size(); ++j)
    collapsible = collapsible && t.stride()[dims[j]] == t.stride()[dims[j + 1]] * t.shape()[dims[j + 1]];
  if (!collapsible) return t.contiguous().reshape({batch, r, c});
  const int64_t bstride = dims.empty() ? 0 : t.stride()[dims.back()];
  return t.as_strided({batch, r, c}, {bstride, t.stride()[nd - 2], t.stride()[nd - 1]});
}

// out (B, m, n) = a (B, m, k) . b (B, k, n); out is contiguous and freshly allocated.
void batched_gemm(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t B = out.shape()[0], m = out.shape()[1], n = out.shape()[2], k = a.shape()[2];
  const auto& as = a.stride();
  const auto& bs = b.stride();
  const auto& cs = out.stride();
  if (const OpBackend backend = backend_of("matmul", out); backend == Backend::CUDA) {
    // Floating types go to the GEMM (tensor cores for the half types), integers to
    // the integer kernel; the CUDA launchers take any strides, like the CPU's.
    if (out.dtype() == kBool) throw NotImplementedError("matmul: not implemented for dtype bool");
    EMBER_CUDA(is_floating(out.dtype())
                   ? cuda::gemm(out.dtype(), B, m, n, k, 1.0, a.data_ptr(), as[0], as[1], as[2], b.data_ptr(), bs[0],
                                bs[1], bs[2], 0.0, out.data_ptr(), cs[0], cs[1], cs[2], stream_of(out))
                   : cuda::gemm_integer(out.dtype(), B, m, n, k, a.data_ptr(), as[0], as[1], as[2], b.data_ptr(),
                                        bs[0], bs[1], bs[2], out.data_ptr(), cs[0], cs[1], cs[2], stream_of(out)));
    return;
  }
  switch (out.dtype()) {
    case DType::Float32:
      cpu::gemm_batched(B, m, n, k, 1.0f, a.data_ptr<float>(), as[0], as[1], as[2], b.data_ptr<float>(), bs[0], bs[1],
                        bs[2], 0.0f, out.data_ptr<float>(), cs[0], cs[1], cs[2]);
      return;
    case DType::Float64:
      cpu::gemm_batched(B, m, n, k, 1.0, a.data_ptr<double>(), as[0], as[1], as[2], b.data_ptr<double>(), bs[0],
                        bs[1], bs[2], 0.0, out.data_ptr<double>(), cs[0], cs[1], cs[2]);
      return;
    case DType::BFloat16: {
      // Products of bfloat16 pairs summed in float32 (vdpbf16ps where the CPU has
      // it, see cpu::gemm_bf16), rounded once to bfloat16 as the GEMM stores them.
      // out is the fresh contiguous result.
      cpu::gemm_bf16_rounded(B, m, n, k, 1.0f, a.data_ptr<BFloat16>(), as[0], as[1], as[2], b.data_ptr<BFloat16>(),
                             bs[0], bs[1], bs[2], {out.data_ptr<BFloat16>(), m * n, n});
      return;
    }
    case DType::Float16: {
      // float16 computes in float32 (the CPU has no float16 FMA) and rounds once on
      // store. The bfloat16 kernel would lose 3 of float16's 11 significant bits.
      Tensor a32 = a.to(kFloat32), b32 = b.to(kFloat32);
      Tensor o32 = empty(out.shape(), {kFloat32, kCPU});
      batched_gemm(a32, b32, o32);
      out.copy_(o32);
      return;
    }
    case DType::Int8:
    case DType::UInt8:
    case DType::Int32:
    case DType::Int64:
      cpu::gemm_integer(out.dtype(), B, m, n, k, a.data_ptr(), as[0], as[1], as[2], b.data_ptr(), bs[0], bs[1], bs[2],
                        out.data_ptr(), cs[0], cs[1], cs[2]);
      return;
    case DType::Bool:
      throw NotImplementedError("matmul: not implemented for dtype bool");
  }
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (auto r = autocast::run(autocast::Policy::lower,
                             [](const Tensor& x, const Tensor& y) { return matmul(x, y); }, a, b))
    return *r;
  check_same_device(a, b);
  if (a.dim() == 0 || b.dim() == 0)
    throw ShapeError(msg("both arguments to matmul need to be at least 1D, but they are ", a.dim(), "D and ", b.dim(),
                         "D"));
  if (a.dtype() != b.dtype())
    throw DTypeError(msg("expected both matmul operands to have the same dtype, but got ", a.dtype(), " and ",
                         b.dtype()));
  if (a.dtype() == kBool) throw NotImplementedError("matmul: not implemented for dtype bool");
  if (a.dim() == 1 && b.dim() == 1) {
    if (a.shape()[0] != b.shape()[0])
      throw ShapeError(msg("inconsistent tensor size, expected tensor [", a.shape()[0], "] and src [", b.shape()[0],
                           "] to have the same number of elements, but got ", a.shape()[0], " and ", b.shape()[0],
                           " elements respectively"));
    return matmul(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
  }
  if (a.dim() == 1) return matmul(a.unsqueeze(0), b).squeeze(-2);
  if (b.dim() == 1) {
    if (a.shape().back() != b.shape()[0]) throw_mismatch(a, b);
    return matmul(a, b.unsqueeze(1)).squeeze(-1);
  }
  const int64_t m = a.shape()[a.dim() - 2], k = a.shape().back(), n = b.shape().back();
  if (b.shape()[b.dim() - 2] != k) throw_mismatch(a, b);
  const Shape abatch(a.shape().begin(), a.shape().end() - 2), bbatch(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(abatch, bbatch);
  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = empty(out_shape, {a.dtype(), a.device()});
  if (needs_grad({&a, &b})) {  // recorded for the >= 2-D case; the 1-D cases add views around it
    auto node = record(OpId::Matmul, {&a, &b}, {&out});
    node->save("a", a);
    node->save("b", b);
  }
  NoGradGuard no_grad;
  if (out.numel() == 0 || backend_of("matmul", a) == Backend::None) return out;
  Shape ae = batch, be = batch;
  ae.insert(ae.end(), {m, k});
  be.insert(be.end(), {k, n});
  Tensor a3 = as_3d(a.expand(ae)), b3 = as_3d(b.expand(be));
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  Tensor o3 = out.view({B, m, n});
  if (k == 0) {
    o3.fill_(0);
    return out;
  }
  batched_gemm(a3, b3, o3);
  return out;
}

Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }

namespace {

// Whether addmm may start the GEMM from the bias: nothing to record, float32 or
// float64 on the CPU, shapes valid (any error comes from the composite path, with
// matmul's and add's messages) and the bias broadcastable to [m, n].
bool addmm_fuses(const Tensor& input, const Tensor& a, const Tensor& b, double beta) {
  if (beta == 0.0 || !input.defined() || needs_grad({&input, &a, &b})) return false;
  const DType dt = a.dtype();
  if ((dt != kFloat32 && dt != kFloat64) || b.dtype() != dt || input.dtype() != dt) return false;
  if (!a.device().is_cpu() || !b.device().is_cpu() || !input.device().is_cpu()) return false;
  if (a.shape()[1] != b.shape()[0] || a.shape()[1] == 0 || input.dim() > 2) return false;
  const int64_t want[2] = {a.shape()[0], b.shape()[1]};
  for (int64_t i = 0; i < input.dim(); ++i) {
    const int64_t s = input.shape()[size_t(i)], w = want[2 - input.dim() + i];
    if (s != 1 && s != w) return false;
  }
  return true;
}

}  // namespace

Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, double beta, double alpha) {
  if (auto r = autocast::run(
          autocast::Policy::lower,
          [beta, alpha](const Tensor& i, const Tensor& x, const Tensor& y) { return addmm(i, x, y, beta, alpha); },
          input, mat1, mat2))
    return *r;
  if (mat1.dim() != 2 || mat2.dim() != 2)
    throw ShapeError(msg("addmm: mat1 and mat2 must be 2-D, got ", mat1.dim(), "D and ", mat2.dim(), "D"));
  if (!addmm_fuses(input, mat1, mat2, beta)) {
    Tensor y = matmul(mat1, mat2);
    if (alpha != 1.0) y = mul(y, alpha);
    if (beta == 0.0 || !input.defined()) return y;
    return add(y, beta == 1.0 ? input : mul(input, beta));
  }
  const int64_t m = mat1.shape()[0], k = mat1.shape()[1], n = mat2.shape()[1];
  Tensor out = empty({m, n}, {mat1.dtype(), kCPU});
  if (out.numel() == 0) return out;
  NoGradGuard no_grad;
  out.copy_(input.expand({m, n}));
  const auto& as = mat1.stride();
  const auto& bs = mat2.stride();
  if (out.dtype() == kFloat32)
    cpu::gemm(m, n, k, float(alpha), mat1.data_ptr<float>(), as[0], as[1], mat2.data_ptr<float>(), bs[0], bs[1],
              float(beta), out.data_ptr<float>(), n, 1);
  else
    cpu::gemm(m, n, k, alpha, mat1.data_ptr<double>(), as[0], as[1], mat2.data_ptr<double>(), bs[0], bs[1], beta,
              out.data_ptr<double>(), n, 1);
  return out;
}

}  // namespace ember
