// Copies whose source and destination are on different devices (see copy_device.cpp).
#pragma once

#include "tensor/tensor.h"

namespace ember {

// dst and src have broadcast-compatible shapes (checked by copy_). Blocks until the
// data is in dst unless non_blocking, where a host-to-device copy returns once the
// host data is staged.
void copy_between_devices(Tensor& dst, const Tensor& src, bool non_blocking);

}  // namespace ember
