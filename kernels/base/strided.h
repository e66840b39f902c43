// The geometry a kernel receives instead of a Tensor: raw pointers, a shape, and one
// stride per operand and dimension (StridedLoop: in bytes, since its operands may
// have different dtypes; ReduceGeometry: in elements). The front-end coalesces
// adjacent dimensions first, so most calls arrive with one or two dimensions.
#pragma once

#include <cstdint>

namespace ember {

inline constexpr int kMaxDims = 12;

inline constexpr int kMaxOperands = 4;

// Up to four operands (out, in0, in1, in2) walked together over `sizes`.
// A broadcast input has stride 0 in the broadcast dimensions. Strides are in bytes.
struct StridedLoop {
  int ndim = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};  // [operand][dim], operand 0 is the output
  char* data[kMaxOperands] = {nullptr, nullptr, nullptr, nullptr};
  // An input may be a number passed by value instead of memory: bit o of `by_value`
  // set means operand o's one element (in the operand's dtype) is the bytes values[o],
  // its strides are 0 and data[o] is null. That is how a C++ number (the 2 in t + 2)
  // reaches a kernel on a device without a copy into the device's memory first.
  unsigned by_value = 0;
  alignas(8) unsigned char values[kMaxOperands][8] = {};
};

// Points the by-value operands of `L` at its own values, for kernels that read every
// operand through memory (the CPU's). L must stay where it is while they run.
inline void point_at_values(StridedLoop& L) {
  for (int o = 0; o < kMaxOperands; ++o)
    if (L.by_value >> o & 1u) L.data[o] = reinterpret_cast<char*>(L.values[o]);
}

// A reduction: out has `out_ndim` kept dims; each output element reduces over
// `red_ndim` dims of the input. Strides are in elements of the input and output.
struct ReduceGeometry {
  int out_ndim = 0;
  int64_t out_sizes[kMaxDims] = {};
  int64_t out_strides_in[kMaxDims] = {};   // input stride of each kept dim
  int64_t out_strides_out[kMaxDims] = {};  // output stride of each kept dim
  int red_ndim = 0;
  int64_t red_sizes[kMaxDims] = {};
  int64_t red_strides[kMaxDims] = {};      // input stride of each reduced dim
  int64_t out_numel = 1;
  int64_t red_numel = 1;
};

}  // namespace ember
