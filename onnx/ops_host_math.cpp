// Small ONNX ops computed on the host in float64 or exact integer arithmetic:
// Det (LU with partial pivoting per matrix), the window functions of opset 17
// (HannWindow, HammingWindow, BlackmanWindow: generalized cosine windows) and
// BitShift. They make or read small tensors (a window is one vector; Det's
// matrices are a model's 3 x 3 transforms), so a host loop is the simple,
// exact choice; a model on another device has its results copied over.
#include "onnx/op_families.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/base/error.h"
#include "onnx/tensor_proto.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

// The determinant of the n x n row-major matrix `a` (overwritten), by Gaussian
// elimination with partial pivoting in float64.
double determinant(double* a, int64_t n) {
  double det = 1;
  for (int64_t c = 0; c < n; ++c) {
    int64_t pivot = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r * n + c]) > std::fabs(a[pivot * n + c])) pivot = r;
    if (a[pivot * n + c] == 0) return 0;
    if (pivot != c) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[pivot * n + j]);
      det = -det;
    }
    det *= a[c * n + c];
    for (int64_t r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / a[c * n + c];
      for (int64_t j = c; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
    }
  }
  return det;
}

OpFn build_det(const NodeContext& ctx) {
  const std::string site = ctx.where();
  return [site](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (!is_floating(x.dtype()))
      throw DTypeError(site + ": the input must be floating point, got " + std::string(dtype_name(x.dtype())));
    if (x.dim() < 2 || x.size(-1) != x.size(-2))
      throw ShapeError(site + ": the input must be square matrices [..., M, M], got " + shape_str(x.shape()));
    const int64_t n = x.size(-1);
    const Shape batch(x.shape().begin(), x.shape().end() - 2);
    Tensor m = x.to(kCPU, kFloat64).contiguous().clone();
    Tensor out = empty(batch, kFloat64);
    const int64_t count = out.numel();
    for (int64_t b = 0; b < count; ++b) out.data_ptr<double>()[b] = determinant(m.data_ptr<double>() + b * n * n, n);
    return std::vector<Tensor>{out.to(x.dtype()).to(x.device())};
  };
}

// w[k] = a0 - a1 cos(2 pi k / N') + a2 cos(4 pi k / N'), N' = size (periodic) or
// size - 1 (symmetric), in float64, then cast to output_datatype.
template <int Kind>
OpFn build_window(const NodeContext& ctx) {
  const DType type = dtype_from_onnx(int32_t(ctx.get_int("output_datatype", 1)), ctx.where());
  const bool periodic = ctx.get_int("periodic", 1) != 0;
  const Device device = ctx.device;
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    if (in[0].numel() != 1 || is_floating(in[0].dtype()))
      throw ShapeError(site + ": size must be one integer, got shape " + shape_str(in[0].shape()));
    const int64_t n = int_values(in[0].reshape({1}))[0];
    if (n < 0) throw ValueError(site + ": size must not be negative, got " + std::to_string(n));
    // The window's length is the model's to choose but must fit in memory like
    // any tensor; the allocation below is counted as one.
    Tensor w = empty({n}, kFloat64);
    constexpr double a0 = Kind == 0 ? 0.5 : Kind == 1 ? 25.0 / 46.0 : 0.42;
    constexpr double a1 = Kind == 0 ? 0.5 : Kind == 1 ? 1 - 25.0 / 46.0 : 0.5;
    constexpr double a2 = Kind == 2 ? 0.08 : 0;
    const double denom = periodic ? double(n) : double(n - 1);
    double* p = w.data_ptr<double>();
    for (int64_t k = 0; k < n; ++k) {
      const double t = 2 * std::numbers::pi * double(k) / denom;
      p[k] = a0 - a1 * std::cos(t) + a2 * std::cos(2 * t);
    }
    // A one-point symmetric window is [1], as numpy's and PyTorch's are (the
    // formula would divide 0 by 0); a periodic one follows the formula.
    if (n == 1 && !periodic) p[0] = 1;
    return std::vector<Tensor>{w.to(type).to(device)};
  };
}

// BitShift of unsigned integers (uint8: the one unsigned type Ember has); a shift
// by the type's width or more gives 0.
OpFn build_bit_shift(const NodeContext& ctx) {
  const std::string direction = ctx.get_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    ctx.invalid("direction must be LEFT or RIGHT, got '" + direction + "'");
  const bool left = direction == "LEFT";
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    if (in[0].dtype() != kUInt8 || in[1].dtype() != kUInt8)
      throw DTypeError(site + ": the inputs must be unsigned integers (uint8), got " +
                       std::string(dtype_name(in[0].dtype())) + " and " + std::string(dtype_name(in[1].dtype())));
    const Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    const Tensor x = in[0].to(kCPU).expand(shape).contiguous(), y = in[1].to(kCPU).expand(shape).contiguous();
    Tensor out = empty(shape, kUInt8);
    const uint8_t *px = x.data_ptr<uint8_t>(), *py = y.data_ptr<uint8_t>();
    uint8_t* po = out.data_ptr<uint8_t>();
    for (int64_t i = 0; i < out.numel(); ++i)
      po[i] = py[i] >= 8 ? 0 : uint8_t(left ? unsigned(px[i]) << py[i] : unsigned(px[i]) >> py[i]);
    return std::vector<Tensor>{out.to(in[0].device())};
  };
}

}  // namespace

void add_host_math_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {
      {"Det", build_det, 11}, {"HannWindow", build_window<0>, 17}, {"HammingWindow", build_window<1>, 17},
      {"BlackmanWindow", build_window<2>, 17}, {"BitShift", build_bit_shift, 11},
  });
}

}  // namespace ember::onnx
