// The autocast guard (see autocast.h): saves the device type's state, sets the new
// one, and restores it on exit.
#include "nn/amp/autocast.h"

namespace ember::nn::amp {

AutocastGuard::AutocastGuard(DeviceType device_type, std::optional<DType> dtype, bool enabled)
    : device_type_(device_type),
      previous_enabled_(ember::autocast::is_enabled(device_type)),
      previous_dtype_(ember::autocast::lower_dtype(device_type)) {
  // Validate everything before changing any state, so a throwing constructor leaves none behind.
  if (device_type == DeviceType::Meta)
    throw ValueError("autocast: device type meta is not supported; use cpu or cuda");
  const DType to = dtype.value_or(device_type == DeviceType::CUDA ? kFloat16 : kBFloat16);
  ember::autocast::set_lower_dtype(device_type, to);
  ember::autocast::set_enabled(device_type, enabled);
  ember::autocast::enter_region();
}

AutocastGuard::~AutocastGuard() {
  ember::autocast::exit_region();
  ember::autocast::set_enabled(device_type_, previous_enabled_);
  ember::autocast::set_lower_dtype(device_type_, previous_dtype_);
}

}  // namespace ember::nn::amp
