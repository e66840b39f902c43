// Cross-entropy fused over the logits, one row per sample: the row's maximum m is
// subtracted before exponentiating so exp never overflows, and the loss is
// (m - x[target]) + log sum exp(x - m), so that near the max the difference is exact
// (one number lse = m + log sum would lose m's low bits: 0.03 at logits near 1e6,
// where PyTorch loses nothing); no log-softmax row is materialized.
// The backward pass recomputes softmax as exp((x - m) - log sum) from the saved pair
// (m, log sum), one exp per element, instead of storing the [n, c] probabilities. Targets are validated in a first
// pass so that a bad one leaves every output untouched.
#include "kernels/cpu/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/base/error.h"
#include "kernels/base/parallel.h"
#include "kernels/base/vec_math.h"

namespace ember::cpu {
namespace {

template <class T>
inline T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_fast(x);
  else return std::exp(x);
}

// The first sample whose target is neither a class nor ignore_index, or -1.
int64_t first_bad_target(int64_t n, int64_t c, const int64_t* t, int64_t ignore_index) {
  for (int64_t i = 0; i < n; ++i)
    if (t[i] != ignore_index && (t[i] < 0 || t[i] >= c)) return i;
  return -1;
}

// A row's max m (0 for a row of -inf) and log sum exp(x - m).
template <class T>
struct LogSumExp {
  T m, ls;
};

template <class T>
LogSumExp<T> log_sum_exp(const T* x, int64_t c) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < c; ++j) m = x[j] > m ? x[j] : m;
  // A row of -inf (or an empty row) has no finite maximum to subtract; 0 keeps
  // x - m at -inf, so the sum is 0 and the log-sum-exp is -inf.
  if (std::isinf(m) && m < 0) m = 0;
  T s = 0;
  for (int64_t j = 0; j < c; ++j) s += exp_of(x[j] - m);
  return {m, std::log(s)};
}

template <class T>
void ce_forward(int64_t n, int64_t c, const T* x, const int64_t* t, int64_t ignore, T* loss,
                T* stats) {
  parallel_rows(n, n * c >= kParallelGrain, [&](int64_t i) {
    const T* xi = x + i * c;
    const LogSumExp<T> l = log_sum_exp(xi, c);
    stats[2 * i] = l.m;
    stats[2 * i + 1] = l.ls;
    loss[i] = t[i] == ignore ? T(0) : (l.m - xi[t[i]]) + l.ls;
  });
}

template <class T>
void ce_backward(int64_t n, int64_t c, const T* x, const int64_t* t, int64_t ignore,
                 const T* stats, const T* gl, T* gx) {
  parallel_rows(n, n * c >= kParallelGrain, [&](int64_t i) {
    const T* xi = x + i * c;
    T* gi = gx + i * c;
    if (t[i] == ignore) {
      std::fill(gi, gi + c, T(0));
      return;
    }
    const T g = gl[i], m = stats[2 * i], ls = stats[2 * i + 1];
    for (int64_t j = 0; j < c; ++j) gi[j] = exp_of((xi[j] - m) - ls) * g;
    gi[t[i]] -= g;
  });
}

template <class F>
int64_t float_types(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f.template operator()<float>();
  if (dt == DType::Float64) return f.template operator()<double>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cpu and dtype " +
                            dtype_name(dt));
}

}  // namespace

int64_t cross_entropy_forward(DType dt, int64_t n, int64_t c, const void* logits,
                              const int64_t* targets, int64_t ignore_index, void* loss,
                              void* stats) {
  return float_types(dt, "cross_entropy_forward", [&]<class T>() -> int64_t {
    if (const int64_t bad = first_bad_target(n, c, targets, ignore_index); bad >= 0) return bad;
    ce_forward(n, c, static_cast<const T*>(logits), targets, ignore_index,
               static_cast<T*>(loss), static_cast<T*>(stats));
    return -1;
  });
}

int64_t cross_entropy_backward(DType dt, int64_t n, int64_t c, const void* logits,
                               const int64_t* targets, int64_t ignore_index, const void* stats,
                               const void* grad_loss, void* grad_logits) {
  return float_types(dt, "cross_entropy_backward", [&]<class T>() -> int64_t {
    if (const int64_t bad = first_bad_target(n, c, targets, ignore_index); bad >= 0) return bad;
    ce_backward(n, c, static_cast<const T*>(logits), targets, ignore_index,
                static_cast<const T*>(stats), static_cast<const T*>(grad_loss),
                static_cast<T*>(grad_logits));
    return -1;
  });
}

int64_t nll_loss_forward(DType dt, int64_t n, int64_t c, const void* log_probs,
                         const int64_t* targets, int64_t ignore_index, void* loss) {
  return float_types(dt, "nll_loss_forward", [&]<class T>() -> int64_t {
    if (const int64_t bad = first_bad_target(n, c, targets, ignore_index); bad >= 0) return bad;
    const T* lp = static_cast<const T*>(log_probs);
    T* out = static_cast<T*>(loss);
    for (int64_t i = 0; i < n; ++i)
      out[i] = targets[i] == ignore_index ? T(0) : -lp[i * c + targets[i]];
    return -1;
  });
}

int64_t nll_loss_backward(DType dt, int64_t n, int64_t c, const int64_t* targets,
                          int64_t ignore_index, const void* grad_loss, void* grad_log_probs) {
  return float_types(dt, "nll_loss_backward", [&]<class T>() -> int64_t {
    if (const int64_t bad = first_bad_target(n, c, targets, ignore_index); bad >= 0) return bad;
    const T* gl = static_cast<const T*>(grad_loss);
    T* gx = static_cast<T*>(grad_log_probs);
    std::fill(gx, gx + n * c, T(0));
    for (int64_t i = 0; i < n; ++i)
      if (targets[i] != ignore_index) gx[i * c + targets[i]] = -gl[i];
    return -1;
  });
}

}  // namespace ember::cpu
