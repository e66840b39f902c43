// Autocast's per-thread state, the cast rules and the parameter cast cache
// (see autocast.h).
#include "tensor/autocast.h"

#include <unordered_map>

#include "tensor/checks.h"
#include "tensor/graph.h"

namespace ember::autocast {
namespace {

struct CachedCast {
  std::weak_ptr<TensorImpl> source;  // the entry is stale once its parameter is gone
  uint64_t version = 0;              // ... or was written in place (an optimizer step)
  bool grad_mode = false;            // a cast made under no_grad has no edge to the parameter
  Tensor cast;
};

struct State {
  bool enabled[kNumDeviceTypes] = {false, false, false, false};  // indexed by DeviceType
  DType dtype[kNumDeviceTypes] = {kBFloat16, kFloat16, kFloat16, kBFloat16};
  int depth = 0;
  bool suspended = false;
  std::unordered_map<const TensorImpl*, CachedCast> cache;
};

State& state() {
  thread_local State s;
  return s;
}

int index_of(DeviceType d) { return static_cast<int>(d); }

// A cached cast can be reused while its parameter is alive and unchanged, grad mode
// is the same, and its graph edge was not freed by a backward without retain_graph.
bool usable(const CachedCast& c, const Tensor& source) {
  if (c.source.expired() || c.version != source.version() || c.grad_mode != grad_mode_enabled()) return false;
  const auto fn = c.cast.grad_fn();
  return !(fn && fn->released);
}

}  // namespace

bool is_enabled(DeviceType device) { return state().enabled[index_of(device)]; }
void set_enabled(DeviceType device, bool enabled) {
  if (device == DeviceType::Meta) throw ValueError("autocast: device type meta is not supported; use cpu or cuda");
  state().enabled[index_of(device)] = enabled;
}
DType lower_dtype(DeviceType device) { return state().dtype[index_of(device)]; }
void set_lower_dtype(DeviceType device, DType dtype) {
  if (!is_half(dtype))
    throw ValueError(msg("autocast: the lower-precision dtype must be float16 or bfloat16, got ", dtype));
  state().dtype[index_of(device)] = dtype;
}

int enter_region() { return ++state().depth; }
int exit_region() {
  State& s = state();
  if (s.depth > 0) --s.depth;
  if (s.depth == 0) s.cache.clear();
  return s.depth;
}
void clear_cache() { state().cache.clear(); }
size_t cache_size() { return state().cache.size(); }

SuspendGuard::SuspendGuard() : previous_(state().suspended) { state().suspended = true; }
SuspendGuard::~SuspendGuard() { state().suspended = previous_; }
bool is_suspended() { return state().suspended; }

std::optional<DType> applies(Policy policy, std::initializer_list<const Tensor*> args) {
  const State& s = state();
  if (s.suspended) return std::nullopt;
  // The device type is that of the first real tensor argument (wrapped numbers
  // live on the CPU whatever the op's device).
  for (const Tensor* t : args) {
    if (!t->defined() || t->is_wrapped_number()) continue;
    const DeviceType d = t->device().type();
    if (d == DeviceType::Meta || !s.enabled[index_of(d)]) return std::nullopt;
    return policy == Policy::lower ? s.dtype[index_of(d)] : kFloat32;
  }
  return std::nullopt;
}

Tensor cast(const Tensor& t, Policy policy, DType to) {
  if (!t.defined() || t.is_wrapped_number() || t.dtype() == to) return t;
  const bool eligible = policy == Policy::lower ? (t.dtype() == kFloat32 || is_half(t.dtype())) : is_half(t.dtype());
  if (!eligible) return t;
  // Only float32 leaf parameters are cached: they are what every forward reuses,
  // and their casts are what a long region would otherwise repeat per use.
  const bool cacheable = policy == Policy::lower && t.dtype() == kFloat32 && t.requires_grad() && t.is_leaf();
  if (!cacheable) return t.to(to);
  auto& cache = state().cache;
  auto it = cache.find(&t.impl());
  if (it != cache.end() && usable(it->second, t)) return it->second.cast;
  Tensor c = t.to(to);
  cache[&t.impl()] = CachedCast{t.impl_ptr(), t.version(), grad_mode_enabled(), c};
  return c;
}

}  // namespace ember::autocast
