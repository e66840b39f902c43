// The pooling fast path for whole, non-overlapping 2x2 windows with stride 2 (the
// FashionMNIST net's pooling), one table per instruction set: pool2d_2x2_<isa>.cpp
// compiles pool2d_2x2_impl.h for its set. pool2d.cpp picks the table at run time.
// Not part of the public API.
#pragma once

#include <cstdint>

#include "kernels/base/window.h"

namespace ember::cpu::pool2d_detail {

// v replaces the running maximum m in PyTorch's max pooling order: a NaN always
// does, so the result is NaN if any value is (the last NaN), and otherwise the first
// largest value.
template <class T>
inline bool replaces(T v, T m) {
  return v > m || v != v;
}

// Each runs planes [p0, p1) of x [n*c planes of h x w] into y (and, for max, the
// index within the plane of each chosen value into ind, when ind is not null).
template <class T>
using Max2x2 = void (*)(const Pool2dShape& s, const T* x, T* y, int64_t* ind, int64_t p0, int64_t p1);
template <class T>
using Avg2x2 = void (*)(const Pool2dShape& s, const T* x, T* y, int64_t p0, int64_t p1);

struct Pool2x2Kernels {
  const char* name;
  Max2x2<float> max_f32;
  Max2x2<double> max_f64;
  Avg2x2<float> avg_f32;
  Avg2x2<double> avg_f64;
};

// nullptr when this build cannot emit that instruction set.
const Pool2x2Kernels* pool2x2_kernels_avx512();
const Pool2x2Kernels* pool2x2_kernels_avx2();
const Pool2x2Kernels* pool2x2_kernels_generic();

}  // namespace ember::cpu::pool2d_detail
