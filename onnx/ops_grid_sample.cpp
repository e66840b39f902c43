// ONNX's GridSample (opset 16): each output position reads the input at the
// point the grid gives, in coordinates normalized to [-1, 1], with bilinear,
// nearest or bicubic interpolation and zeros, border or reflection padding. It
// follows PyTorch's grid_sample, on which ONNX modelled it: the point is mapped
// to pixels (align_corners: -1 and 1 are the corner pixels' centres, else their
// outer edges); border and reflection move the point into the image for bilinear
// and nearest sampling, and each tap for bicubic. A float64 loop on the host: the
// grids models sample are small (a spatial transformer's, a flow field's).
#include "onnx/op_families.h"

#include <cmath>
#include <limits>
#include <string>

#include "kernels/base/error.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

enum class Mode { Bilinear, Nearest, Bicubic };
enum class Padding { Zeros, Border, Reflection };

struct Sampler {
  Mode mode;
  Padding padding;
  bool align_corners;

  // Normalized [-1, 1] to a pixel coordinate along a dim of `size` pixels.
  double unnormalize(double v, int64_t size) const {
    return align_corners ? (v + 1) / 2 * double(size - 1) : ((v + 1) * double(size) - 1) / 2;
  }

  // v reflected into [low2 / 2, high2 / 2] (bounds given doubled, as they may be halves).
  static double reflect(double v, double low2, double high2) {
    if (low2 == high2) return 0;
    const double low = low2 / 2, span = (high2 - low2) / 2;
    v = std::fabs(v - low);
    const double extra = std::fmod(v, span);
    const double flips = std::floor(v / span);
    return std::fmod(flips, 2) == 0 ? extra + low : span - extra + low;
  }

  // A pixel coordinate moved into the image as the padding mode says.
  double padded(double v, int64_t size) const {
    const auto clip = [size](double c) { return std::min(double(size - 1), std::max(0.0, c)); };
    if (padding == Padding::Border) return clip(v);
    if (padding == Padding::Reflection) {
      v = align_corners ? reflect(v, 0, 2 * double(size - 1)) : reflect(v, -1, 2 * double(size) - 1);
      return clip(v);
    }
    return v;
  }

  static double cubic_near(double t, double a) { return ((a + 2) * t - (a + 3)) * t * t + 1; }          // |t| <= 1
  static double cubic_far(double t, double a) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; }    // 1 < |t| < 2

  // The pixel index at or below v, or -1 (outside the image, as v is) when v is
  // not within a few pixels of [0, size): NaN, or far enough out that the
  // conversion to int64 would not be defined.
  static int64_t index_of(double v, int64_t size) {
    return v >= -4 && v <= double(size) + 4 ? int64_t(std::floor(v)) : -1;
  }

  // The value of plane `img` (h x w) at the grid point (gx, gy).
  // A bicubic pixel coordinate beyond 1e15 brought near the image without
  // changing what its taps read: with border padding every tap clips to the same
  // edge as at size + 2 (or -3); with reflection the taps repeat with the
  // reflection's period. With zeros padding no tap reads anything: NaN.
  double near_image(double v, int64_t size) const {
    if (std::fabs(v) < 1e15) return v;
    if (padding == Padding::Border) return v > 0 ? double(size) + 2 : -3.0;
    if (padding == Padding::Reflection) {
      const double low = align_corners ? 0 : -0.5, period = align_corners ? 2.0 * double(size - 1) : 2.0 * double(size);
      return period > 0 ? low + std::fmod(v - low, period) : 0;
    }
    return std::numeric_limits<double>::quiet_NaN();
  }

  double sample(const double* img, int64_t h, int64_t w, double gx, double gy) const {
    const auto at = [&](int64_t y, int64_t x) { return y >= 0 && y < h && x >= 0 && x < w ? img[y * w + x] : 0.0; };
    if (std::isnan(gx) || std::isnan(gy)) return 0;  // a point that is not one reads nothing, whatever the padding
    if (mode == Mode::Bicubic) {
      const double x = near_image(unnormalize(gx, w), w), y = near_image(unnormalize(gy, h), h);
      if (std::isnan(x) || std::isnan(y)) return 0;  // zeros padding, far away
      const double x0 = std::floor(x), y0 = std::floor(y), tx = x - x0, ty = y - y0;
      constexpr double a = -0.75;
      const double cx[4] = {cubic_far(tx + 1, a), cubic_near(tx, a), cubic_near(1 - tx, a), cubic_far(2 - tx, a)};
      const double cy[4] = {cubic_far(ty + 1, a), cubic_near(ty, a), cubic_near(1 - ty, a), cubic_far(2 - ty, a)};
      double sum = 0;
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i) {
          // Each tap is padded on its own; a tap still outside reads 0.
          const double px = padded(x0 - 1 + i, w), py = padded(y0 - 1 + j, h);
          sum += cx[i] * cy[j] * at(index_of(py, h), index_of(px, w));
        }
      return sum;
    }
    const double x = padded(unnormalize(gx, w), w), y = padded(unnormalize(gy, h), h);
    if (mode == Mode::Nearest) return at(index_of(std::nearbyint(y), h), index_of(std::nearbyint(x), w));
    if (!(x > -2 && x < double(w) + 1 && y > -2 && y < double(h) + 1)) return 0;  // NaN, or both taps outside
    const int64_t ix = int64_t(std::floor(x)), iy = int64_t(std::floor(y));
    const double tx = x - double(ix), ty = y - double(iy);
    return at(iy, ix) * (1 - tx) * (1 - ty) + at(iy, ix + 1) * tx * (1 - ty) + at(iy + 1, ix) * (1 - tx) * ty +
           at(iy + 1, ix + 1) * tx * ty;
  }
};

OpFn build_grid_sample(const NodeContext& ctx) {
  const std::string mode = ctx.get_string("mode", "bilinear"), padding = ctx.get_string("padding_mode", "zeros");
  Sampler s{};
  if (mode == "bilinear") s.mode = Mode::Bilinear;
  else if (mode == "nearest") s.mode = Mode::Nearest;
  else if (mode == "bicubic") s.mode = Mode::Bicubic;
  else ctx.invalid("mode must be bilinear, nearest or bicubic, got '" + mode + "'");
  if (padding == "zeros") s.padding = Padding::Zeros;
  else if (padding == "border") s.padding = Padding::Border;
  else if (padding == "reflection") s.padding = Padding::Reflection;
  else ctx.invalid("padding_mode must be zeros, border or reflection, got '" + padding + "'");
  s.align_corners = ctx.get_int("align_corners", 0) != 0;
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &grid = in[1];
    if (x.dim() != 4) throw ShapeError(site + ": the input must be [N, C, H, W], got " + shape_str(x.shape()));
    if (grid.dim() != 4 || grid.size(0) != x.size(0) || grid.size(3) != 2)
      throw ShapeError(site + ": the grid must be [N, H_out, W_out, 2] with the input's N, got " +
                       shape_str(grid.shape()) + " for an input of " + shape_str(x.shape()));
    if (!is_floating(x.dtype()) || !is_floating(grid.dtype()))
      throw DTypeError(site + ": the input and grid must be floating point, got " + std::string(dtype_name(x.dtype())) +
                       " and " + std::string(dtype_name(grid.dtype())));
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), ho = grid.size(1), wo = grid.size(2);
    Tensor out = zeros({n, c, ho, wo}, kFloat64);
    if (out.numel() == 0 || h == 0 || w == 0) return std::vector<Tensor>{out.to(x.dtype()).to(x.device())};
    const Tensor xs = x.to(kCPU, kFloat64).contiguous(), gs = grid.to(kCPU, kFloat64).contiguous();
    const double *src = xs.data_ptr<double>(), *g = gs.data_ptr<double>();
    double* dst = out.data_ptr<double>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t p = 0; p < ho * wo; ++p) {
        const double gx = g[(b * ho * wo + p) * 2], gy = g[(b * ho * wo + p) * 2 + 1];
        for (int64_t ch = 0; ch < c; ++ch)
          dst[(b * c + ch) * ho * wo + p] = s.sample(src + (b * c + ch) * h * w, h, w, gx, gy);
      }
    return std::vector<Tensor>{out.to(x.dtype()).to(x.device())};
  };
}

}  // namespace

void add_grid_sample_ops(std::vector<OpRow>& rows) { rows.insert(rows.end(), {{"GridSample", build_grid_sample, 16}}); }

}  // namespace ember::onnx
