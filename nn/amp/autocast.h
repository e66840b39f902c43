// The autocast guard: inside its scope the listed ops of tensor/autocast.h run in a
// lower precision (matmul, linear, conv2d) or in float32 (softmax, losses,
// reductions, exp/log/pow) for tensors of one device type, on this thread.
//
//   {
//     nn::amp::AutocastGuard autocast(DeviceType::CUDA);          // float16 on CUDA
//     Tensor loss = F::cross_entropy(net(x), y);                  // float32 loss
//   }
//   scaler.scale(loss).backward();                                // outside the region
//
// Guards nest; an inner guard with enabled = false turns autocast off for a block
// (and restores it on exit). The outermost guard's exit frees the cached casts of
// the parameters. Parameters themselves are never converted: they stay float32
// (the master weights) and receive float32 gradients through the recorded casts.
#pragma once

#include "kernels/base/export.h"

#include <optional>

#include "tensor/autocast.h"

EMBER_API_BEGIN

namespace ember::nn::amp {

class AutocastGuard {
 public:
  // dtype: float16 or bfloat16; by default float16 on CUDA and bfloat16 on CPU, as
  // PyTorch. A ValueError names any other dtype, and the meta device type.
  explicit AutocastGuard(DeviceType device_type, std::optional<DType> dtype = std::nullopt, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_type_;
  bool previous_enabled_;
  DType previous_dtype_;
};

// Whether autocast is on for a device type on this thread, and its dtype.
inline bool is_autocast_enabled(DeviceType device_type) { return ember::autocast::is_enabled(device_type); }
inline DType get_autocast_dtype(DeviceType device_type) { return ember::autocast::lower_dtype(device_type); }

}  // namespace ember::nn::amp

EMBER_API_END
