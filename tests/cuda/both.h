// Helpers for the cuda suite: the same input on both devices (same values, same
// strides, so non-contiguous CUDA views are tested as such), comparison of a CUDA
// result with the CPU result, and a runner that checks that an op either gives the
// same result on both devices or raises the same error on both.
#pragma once

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include <catch2/catch.hpp>

#include "support/reference.h"

namespace cuda_test {

using ember::DType;
using ember::Shape;
using ember::Tensor;
using ref::Layout;

inline const ember::Device kCuda{ember::DeviceType::CUDA, 0};

// One logical input on both devices. `base_*` is the contiguous tensor the view was
// cut from (in-place tests compare the whole base, to see that nothing outside the
// view was written).
struct Both {
  Tensor cpu, gpu, base_cpu, base_gpu;
};

// The view of `base` that layout l gives for logical shape `shape` (as ref::layout_tensor).
inline Tensor apply_layout(const Tensor& base, const Shape& shape, Layout l) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  switch (l) {
    case Layout::contiguous: return base;
    case Layout::transposed: return base.transpose(-1, -2);
    case Layout::sliced: return base.slice(0, 1, std::nullopt, 2);
    case Layout::expanded: return base.expand(shape);
    case Layout::permuted: {
      Shape dims(nd);
      for (int64_t d = 0; d < nd; ++d) dims[d] = nd - 1 - d;
      return base.permute(dims);
    }
  }
  return base;
}

inline Shape base_shape(const Shape& shape, Layout l) {
  Shape b = shape;
  const size_t nd = shape.size();
  switch (l) {
    case Layout::contiguous: break;
    case Layout::transposed: std::swap(b[nd - 1], b[nd - 2]); break;
    case Layout::sliced: b[0] = 2 * shape[0] + 1; break;
    case Layout::expanded: b[0] = 1; break;
    case Layout::permuted: std::reverse(b.begin(), b.end()); break;
  }
  return b;
}

// Input of logical shape `shape` in layout l whose base holds values(n).
inline Both layout_both(const Shape& shape, DType dt, Layout l, const std::function<std::vector<double>(int64_t)>& values) {
  const Shape bs = base_shape(shape, l);
  Both r;
  r.base_cpu = ref::make(bs, dt, values(ref::numel(bs)));
  r.base_gpu = r.base_cpu.to(kCuda);
  r.cpu = apply_layout(r.base_cpu, shape, l);
  r.gpu = apply_layout(r.base_gpu, shape, l);
  return r;
}

inline Both random_both(const Shape& shape, DType dt, Layout l, std::mt19937_64& rng, double lo, double hi) {
  return layout_both(shape, dt, l, [&](int64_t n) { return ref::random_values(n, dt, rng, lo, hi); });
}

// A contiguous CPU tensor and its CUDA copy.
inline Both both_of(const Tensor& cpu) {
  Both r;
  r.cpu = r.base_cpu = cpu;
  r.gpu = r.base_gpu = cpu.to(kCuda);
  return r;
}

// Tolerance of a CUDA result against the CPU result, elementwise, by the dtype the
// result is stored in (docs/numerics.md, "CUDA against CPU", explains each value).
inline ref::Tol tol_for(DType dt) {
  switch (dt) {
    case DType::Float64: return {1e-12, 1e-13};
    case DType::Float32: return {1e-5, 1e-6};
    case DType::Float16: return {2e-3, 1e-6};   // two units in the last place (2^-10 each)
    case DType::BFloat16: return {1.6e-2, 1e-6};  // two units in the last place (2^-7 each)
    default: return {0, 0};                      // integers and bool: exact
  }
}
inline const ref::Tol kExact{0, 0};

inline std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << ember::dtype_name(t.dtype()) << ref::str(t.shape()) << " strides " << ref::str(t.stride()) << " on "
     << t.device();
  return os.str();
}

// "" when the CUDA result `gpu` has the CPU result's dtype and shape, lives on the
// GPU, and matches it within `tol`; else what differs.
inline std::string diff(const Tensor& gpu, const Tensor& cpu, ref::Tol tol) {
  if (!gpu.device().is_cuda()) return "the result lives on " + gpu.device().str() + ", not on the GPU";
  if (gpu.dtype() != cpu.dtype())
    return std::string("dtype ") + ember::dtype_name(gpu.dtype()) + " != CPU's " + ember::dtype_name(cpu.dtype());
  return ref::compare(gpu.cpu(), ref::read(cpu), tol);
}

// Like diff, with an allowed absolute error per element (row-major).
inline std::string diff_within(const Tensor& gpu, const Tensor& cpu, const std::vector<double>& allowed) {
  if (!gpu.device().is_cuda()) return "the result lives on " + gpu.device().str() + ", not on the GPU";
  if (gpu.dtype() != cpu.dtype())
    return std::string("dtype ") + ember::dtype_name(gpu.dtype()) + " != CPU's " + ember::dtype_name(cpu.dtype());
  return ref::compare_within(gpu.cpu(), ref::read(cpu), allowed);
}

// allowed[i] = tol.atol + tol.rtol * |want[i]| + k * scale[i]: the elementwise
// tolerance plus k times a magnitude of the terms that made element i (a sum of
// absolute values, computed by the caller in float64).
inline std::vector<double> allowance(const Tensor& want, ref::Tol tol, double k, const Tensor& scale) {
  const ref::Array w = ref::read(want);
  const ref::Array s = ref::read(scale.to(ember::kFloat64));
  REQUIRE(w.v.size() == s.v.size());
  std::vector<double> a(w.v.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = tol.atol + tol.rtol * std::fabs(w.v[i]) + k * std::fabs(s.v[i]);
  return a;
}

// The outcome of running an op: its results, or the error it raised.
struct Outcome {
  std::vector<Tensor> results;
  std::string error_type, error_text;
  bool threw() const { return !error_type.empty(); }
};

inline Outcome run(const std::function<std::vector<Tensor>()>& f) {
  Outcome o;
  try {
    o.results = f();
  } catch (const ember::Error& e) {
    o.error_type = typeid(e).name();
    o.error_text = e.what();
  }
  return o;
}

// Runs f_cpu and f_gpu. Where the CPU raises, the GPU must raise the same error type
// with the same text (returns false: nothing to compare). Otherwise the GPU must not
// raise, must give as many results, and the caller compares them (returns true).
inline bool same_outcome(const Outcome& cpu, const Outcome& gpu) {
  if (cpu.threw()) {
    INFO("the CPU raised " << cpu.error_text);
    CHECK(gpu.error_type == cpu.error_type);
    CHECK(gpu.error_text == cpu.error_text);
    return false;
  }
  INFO("the GPU raised " << gpu.error_text);
  REQUIRE_FALSE(gpu.threw());
  REQUIRE(gpu.results.size() == cpu.results.size());
  return true;
}

// Both devices' results of one op compared elementwise within tol (by result).
inline void check_op(const std::function<std::vector<Tensor>(bool on_gpu)>& f,
                     const std::function<ref::Tol(DType)>& tol = tol_for) {
  const Outcome c = run([&] { return f(false); });
  const Outcome g = run([&] { return f(true); });
  if (!same_outcome(c, g)) return;
  for (size_t i = 0; i < c.results.size(); ++i) {
    INFO("result " << i << ": CPU " << describe(c.results[i]) << ", GPU " << describe(g.results[i]));
    if (!c.results[i].defined()) {
      CHECK_FALSE(g.results[i].defined());
      continue;
    }
    CHECK(diff(g.results[i], c.results[i], tol(c.results[i].dtype())) == "");
  }
}

}  // namespace cuda_test

#define CHECK_SAME(gpu, cpu, tol) CHECK(cuda_test::diff(gpu, cpu, tol) == std::string())
#define REQUIRE_SAME(gpu, cpu, tol) REQUIRE(cuda_test::diff(gpu, cpu, tol) == std::string())
