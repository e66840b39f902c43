// ONNX ops that Ember has no tensor op for, computed by a plain loop on the host:
// CumSum (a running sum along one axis) and Mod (the remainder, with either
// sign convention). A model on another device has its input copied to the host
// and the result copied back. They are exact: CumSum sums floating values in
// float64 and integers in int64 (wrapping like the ONNX reference when cast back
// to int32), Mod uses std::fmod (exact in any precision) and integer remainders.
// In the models that use them (position ids from an attention mask, index
// arithmetic) the tensors are small.
#include "onnx/op_families.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

// Running sums of `src` along the middle dim of [outer, n, inner], into `out`.
template <class T>
void running_sums(const T* src, T* out, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  std::vector<T> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), T(0));
    for (int64_t step = 0; step < n; ++step) {
      const int64_t k = reverse ? n - 1 - step : step;
      const int64_t base = (o * n + k) * inner;
      for (int64_t j = 0; j < inner; ++j) {
        const T v = src[base + j];
        if (exclusive) {
          out[base + j] = acc[size_t(j)];
          acc[size_t(j)] += v;
        } else {
          acc[size_t(j)] += v;
          out[base + j] = acc[size_t(j)];
        }
      }
    }
  }
}

OpFn build_cumsum(const NodeContext& ctx) {
  const bool exclusive = ctx.get_int("exclusive", 0) != 0, reverse = ctx.get_int("reverse", 0) != 0;
  const std::string site = ctx.where();
  return [exclusive, reverse, site](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (in[1].numel() != 1) throw ShapeError(site + ": axis must hold one value, got " + std::to_string(in[1].numel()));
    if (is_floating(in[1].dtype())) throw DTypeError(site + ": axis must be an integer");
    const int64_t axis = normalize_axis(site, in[1].item<int64_t>(), std::max<int64_t>(x.dim(), 1));
    if (x.dtype() == kBool) throw DTypeError(site + ": the input must be numbers, got bool");
    const bool floating = is_floating(x.dtype());
    const Tensor src = x.to(kCPU, floating ? kFloat64 : kInt64).contiguous();
    Tensor out = empty(src.shape(), src.dtype());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
    for (int64_t d = axis + 1; d < x.dim(); ++d) inner *= x.size(d);
    const int64_t n = x.dim() == 0 ? 1 : x.size(axis);
    if (floating)
      running_sums(src.data_ptr<double>(), out.data_ptr<double>(), outer, n, inner, exclusive, reverse);
    else  // unsigned sums wrap like the ONNX reference's, without signed overflow
      running_sums(reinterpret_cast<const uint64_t*>(src.data_ptr<int64_t>()),
                   reinterpret_cast<uint64_t*>(out.data_ptr<int64_t>()), outer, n, inner, exclusive, reverse);
    return std::vector<Tensor>{out.to(x.dtype()).to(x.device())};
  };
}

// The remainder of a / b: with fmod, the sign of a (C's fmod and %); without, the
// sign of b (Python's %), for integers only, as ONNX requires.
double remainder_of(double a, double b, bool c_style) {
  const double r = std::fmod(a, b);
  if (c_style || r == 0 || (r < 0) == (b < 0)) return r;
  return r + b;
}

int64_t remainder_of(int64_t a, int64_t b, bool c_style) {
  if (b == -1) return 0;  // INT64_MIN % -1 would overflow
  const int64_t r = a % b;
  if (c_style || r == 0 || (r < 0) == (b < 0)) return r;
  return r + b;
}

OpFn build_mod(const NodeContext& ctx) {
  const bool c_style = ctx.get_int("fmod", 0) != 0;
  const std::string site = ctx.where();
  return [c_style, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const DType type = promote_types(in[0].dtype(), in[1].dtype());
    const bool floating = is_floating(type);
    if (type == kBool) throw DTypeError(site + ": the inputs must be numbers, got bool");
    if (floating && !c_style) throw ValueError(site + ": fmod must be 1 for floating-point inputs");
    const Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    const DType work = floating ? kFloat64 : kInt64;
    const Tensor a = in[0].to(kCPU, work).expand(shape).contiguous();
    const Tensor b = in[1].to(kCPU, work).expand(shape).contiguous();
    Tensor out = empty(shape, work);
    const int64_t count = out.numel();
    if (floating) {
      const double *pa = a.data_ptr<double>(), *pb = b.data_ptr<double>();
      double* po = out.data_ptr<double>();
      for (int64_t i = 0; i < count; ++i) po[i] = remainder_of(pa[i], pb[i], true);
    } else {
      const int64_t *pa = a.data_ptr<int64_t>(), *pb = b.data_ptr<int64_t>();
      int64_t* po = out.data_ptr<int64_t>();
      for (int64_t i = 0; i < count; ++i) {
        if (pb[i] == 0) throw ValueError(site + ": integer remainder by zero");
        po[i] = remainder_of(pa[i], pb[i], c_style);
      }
    }
    return std::vector<Tensor>{out.to(type).to(in[0].device())};
  };
}

}  // namespace

void add_host_loop_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {{"CumSum", build_cumsum, 11}, {"Mod", build_mod, 10}});
}

}  // namespace ember::onnx
