// ONNX's normalizations that older CNNs and speech models use, composed of
// tensor ops (so they run on every device): LRN, local response normalization
// across channels (AlexNet, GoogLeNet), and MeanVarianceNormalization.
#include "onnx/op_families.h"

#include <algorithm>

#include "kernels/base/error.h"
#include "tensor/checks.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

// y = x / (bias + alpha / size * sum of x^2 over the `size` channels around c)^beta,
// the window running from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2)
// and cut at the first and last channel.
OpFn build_lrn(const NodeContext& ctx) {
  if (!ctx.has("size")) ctx.invalid("attribute 'size' is missing");
  const int64_t size = ctx.get_int("size", 1);
  if (size < 1) ctx.invalid("size must be positive, got " + std::to_string(size));
  const double alpha = ctx.get_float("alpha", 1e-4), beta = ctx.get_float("beta", 0.75),
               bias = ctx.get_float("bias", 1.0);
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.dim() < 2) throw ShapeError(site + ": the input must be [N, C, ...], got " + shape_str(x.shape()));
    if (!is_floating(x.dtype()))
      throw DTypeError(site + ": the input must be floating point, got " + std::string(dtype_name(x.dtype())));
    const int64_t channels = x.size(1), before = (size - 1) / 2, after = size - 1 - before;
    // A window wider than the channels reads only zeros past them.
    const int64_t lo = std::min(before, channels), hi = std::min(after, channels);
    std::vector<Pair> pads(size_t(x.dim()), Pair{0, 0});
    pads[1] = {lo, hi};
    const Tensor squares = pad(mul(x, x), pads);
    Tensor sums = squares.narrow(1, 0, channels);
    for (int64_t k = 1; k < std::min<int64_t>(size, lo + hi + 1); ++k) sums = add(sums, squares.narrow(1, k, channels));
    return std::vector<Tensor>{div(x, pow(add(mul(sums, alpha / double(size)), bias), beta))};
  };
}

// (x - mean) / (std + 1e-9) over `axes` (default N, H, W: per channel), the
// variance without Bessel's correction, as ONNX's function body computes it.
OpFn build_mvn(const NodeContext& ctx) {
  const Shape axes = ctx.get_ints("axes", {0, 2, 3});
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (!is_floating(x.dtype()))
      throw DTypeError(site + ": the input must be floating point, got " + std::string(dtype_name(x.dtype())));
    Shape dims;
    for (int64_t a : axes) {
      const int64_t d = normalize_axis(site, a, x.dim());
      if (std::find(dims.begin(), dims.end(), d) != dims.end()) throw ShapeError(site + ": axes repeat a dim");
      dims.push_back(d);
    }
    const Tensor centered = sub(x, mean(x, dims, true));
    const Tensor sd = sqrt(mean(mul(centered, centered), dims, true));
    return std::vector<Tensor>{div(centered, add(sd, 1e-9))};
  };
}

}  // namespace

void add_normalization_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {{"LRN", build_lrn}, {"MeanVarianceNormalization", build_mvn, 9}});
}

}  // namespace ember::onnx
