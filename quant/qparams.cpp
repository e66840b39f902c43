// The parameter choosers (see qparams.h), written after PyTorch's
// ChooseQuantizationParams and its observers' _calculate_qparams, in the same
// precisions (double for the affine intermediate values, float32 for the results).
#include "quant/qparams.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/quantize_int8.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::quant {

QParams choose_qparams(float min, float max, int32_t qmin, int32_t qmax, bool reduce_range) {
  if (!std::isfinite(min) || !std::isfinite(max))
    throw ValueError(msg("choose_qparams: the range must be finite, got [", min, ", ", max, "]"));
  if (min > max) throw ValueError(msg("choose_qparams: min ", min, " is greater than max ", max));
  if (reduce_range) {
    qmin /= 2;
    qmax /= 2;
  }
  min = std::min(min, 0.0f);
  max = std::max(max, 0.0f);
  double scale = (double(max) - min) / double(qmax - qmin);
  // A zero scale, or one whose reciprocal overflows, would make every code the zero point.
  if (float(scale) == 0.0f || std::isinf(1.0f / float(scale))) scale = 0.1;
  if (scale < kMinAffineScale) {
    const float tiny = float(scale);
    scale = kMinAffineScale;
    // Stretch the range to the new scale, keeping 0 where it was.
    if (min == 0.0f) {
      max = kMinAffineScale * float(qmax - qmin);
    } else if (max == 0.0f) {
      min = -kMinAffineScale * float(qmax - qmin);
    } else {
      const float amplifier = kMinAffineScale / tiny;
      min *= amplifier;
      max *= amplifier;
    }
  }
  // Pick the zero point from whichever end loses less, then round it into range.
  const double zp_from_min = qmin - min / scale;
  const double zp_from_max = qmax - max / scale;
  const double err_min = std::abs(double(qmin)) - std::abs(min / scale);
  const double err_max = std::abs(double(qmax)) - std::abs(max / scale);
  const double zp = err_min < err_max ? zp_from_min : zp_from_max;
  int32_t nudged;
  if (zp < qmin) nudged = qmin;
  else if (zp > qmax) nudged = qmax;
  else nudged = int32_t(std::nearbyint(zp));
  return {float(scale), nudged};
}

QParams choose_symmetric_qparams(float min, float max, bool reduce_range) {
  if (!std::isfinite(min) || !std::isfinite(max))
    throw ValueError(msg("choose_qparams: the range must be finite, got [", min, ", ", max, "]"));
  if (min > max) throw ValueError(msg("choose_qparams: min ", min, " is greater than max ", max));
  const float qrange = reduce_range ? 127.0f : 255.0f;  // qmax - qmin
  const float absmax = std::max(-std::min(min, 0.0f), std::max(max, 0.0f));
  return {std::max(absmax / (qrange / 2), kMinSymmetricScale), 0};
}

namespace {

cpu::MinMax checked_min_max(const char* op, const Tensor& x) {
  if (x.dtype() != kFloat32) throw DTypeError(msg(op, ": expected a float32 tensor, got ", x.dtype()));
  if (!x.device().is_cpu()) throw_no_kernel(op, x);
  const Tensor c = x.contiguous();
  const cpu::MinMax mm = cpu::min_max(c.data_ptr<float>(), c.numel());
  if (!mm.finite) throw ValueError(msg(op, ": the tensor holds inf or NaN, which cannot be quantized"));
  return mm;
}

}  // namespace

QParams choose_qparams(const Tensor& x, int32_t qmin, int32_t qmax, bool reduce_range) {
  const cpu::MinMax mm = checked_min_max("choose_qparams", x);
  return choose_qparams(mm.min, mm.max, qmin, qmax, reduce_range);
}

QParams choose_symmetric_qparams(const Tensor& x, bool reduce_range) {
  const cpu::MinMax mm = checked_min_max("choose_qparams", x);
  return choose_symmetric_qparams(mm.min, mm.max, reduce_range);
}

std::pair<Tensor, Tensor> choose_symmetric_qparams_per_channel(const Tensor& x, int64_t axis, bool reduce_range) {
  checked_min_max("choose_qparams", x);  // dtype, device and finiteness
  axis = wrap_dim(axis, x.dim());
  const int64_t channels = x.size(axis);
  // Channel c's values are row c of the tensor with `axis` moved to the front.
  const Tensor rows = x.transpose(0, axis).contiguous().reshape({channels, -1});
  Tensor scales = empty({channels}, kFloat32);
  Tensor zero_points = zeros({channels}, kInt32);
  float* s = scales.data_ptr<float>();
  const float* r = rows.data_ptr<float>();
  const int64_t per = rows.size(1);
  for (int64_t c = 0; c < channels; ++c) {
    const cpu::MinMax mm = cpu::min_max(r + c * per, per);
    s[c] = choose_symmetric_qparams(mm.min, mm.max, reduce_range).scale;
  }
  return {scales, zero_points};
}

}  // namespace ember::quant
