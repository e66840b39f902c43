// Autocast's state and policy: a per-thread switch (one per device type) that makes
// the op front-ends it lists cast their floating inputs before they run. GEMM-like
// ops (matmul, linear, conv2d) run in the lower-precision dtype, where tensor cores
// and halved memory traffic pay; ops whose result is sensitive to rounding
// (reductions, softmax, exp/log/pow, the losses) run in float32. Every other op
// just follows type promotion, which already takes the widest of mixed inputs.
// The scoped guard users hold is nn::amp::autocast (nn/amp/autocast.h); this file
// is what tensor/ consults, so tensor/ never depends on nn/.
#pragma once

#include "kernels/base/export.h"

#include <cstddef>
#include <initializer_list>
#include <optional>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::autocast {

// How a listed op treats its floating inputs under autocast.
enum class Policy {
  lower,  // float32/float16/bfloat16 inputs cast to the region's dtype
  fp32,   // float16/bfloat16 inputs cast to float32
};

// The state of one device type on this thread. Defaults as PyTorch: disabled;
// float16 on CUDA, bfloat16 on CPU (the CPU has no fast float16 arithmetic).
bool is_enabled(DeviceType device);
void set_enabled(DeviceType device, bool enabled);
DType lower_dtype(DeviceType device);
void set_lower_dtype(DeviceType device, DType dtype);

// Regions nest; the cast cache lives as long as the outermost region.
// enter/exit return the depth after the change; exit clears the cache at depth 0.
int enter_region();
int exit_region();
// Casts of float32 leaf parameters to the lower dtype, kept so that a weight used
// by several ops of one forward is converted once. Cleared by the outermost exit.
void clear_cache();
size_t cache_size();

// While held, no front-end casts on this thread: a listed op holds one around its
// own body (its inputs are already cast, and its inner ops must not cast again),
// and the autograd engine holds one during backward, so that each backward rule
// runs in the dtype its forward used.
class SuspendGuard {
 public:
  SuspendGuard();
  ~SuspendGuard();
  SuspendGuard(const SuspendGuard&) = delete;
  SuspendGuard& operator=(const SuspendGuard&) = delete;

 private:
  bool previous_;
};
bool is_suspended();

// The dtype an op of `policy` casts to when autocast applies to these arguments on
// this thread (enabled for their device type, not suspended); nullopt otherwise.
std::optional<DType> applies(Policy policy, std::initializer_list<const Tensor*> args);
// `t` cast for an op of `policy` whose target dtype is `to`. Only floating tensors
// other than float64 are cast (float64 is asked for on purpose); wrapped numbers,
// integer tensors and undefined tensors pass through.
Tensor cast(const Tensor& t, Policy policy, DType to);

// The front-ends' one line: when autocast applies, returns op(args cast) computed
// with autocast suspended; otherwise nullopt and the front-end carries on.
//   if (auto r = autocast::run(Policy::lower, [&](const Tensor& x, const Tensor& y) { return matmul(x, y); }, a, b))
//     return *r;
template <class Op, class... Args>
std::optional<Tensor> run(Policy policy, Op&& op, const Args&... args) {
  const std::optional<DType> to = applies(policy, {&args...});
  if (!to) return std::nullopt;
  SuspendGuard suspend;
  return op(cast(args, policy, *to)...);
}

}  // namespace ember::autocast

EMBER_API_END
