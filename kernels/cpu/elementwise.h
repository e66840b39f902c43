// CPU elementwise kernels: unary and binary functors, where, dtype conversion,
// fill and random fills. Every kernel walks a StridedLoop whose strides are in BYTES
// (operands of a conversion have different element sizes).
#pragma once

#include <cstdint>

#include "kernels/base/ops.def.h"
#include "kernels/base/scalar.h"
#include "kernels/base/strided.h"

namespace ember::cpu {

// out = op(in); operand 0 is out, 1 is in; both of dtype `dt`.
void unary(UnaryOp op, DType dt, const StridedLoop& loop);
// out = op(a, b); operands out, a, b. a and b have dtype `dt`; out has `dt`, or
// bool for the comparisons.
void binary(BinaryOp op, DType dt, const StridedLoop& loop);
// out = cond ? a : b; operands out, cond (bool), a, b.
void where(DType dt, const StridedLoop& loop);
// out = static_cast<dst>(in), with round-to-nearest-even for the half types.
void copy(DType dst, DType src, const StridedLoop& loop);
// Contiguous fill. Floating dtypes take `fvalue`, integral and bool take `ivalue`.
void fill(DType dt, void* data, int64_t numel, double fvalue, int64_t ivalue);
// Contiguous Philox-based fills: each element depends only on (seed, offset, its
// index). `offset` counts 32-bit words; a fill uses random_words_per_element(dt)
// words per element for uniform and two per element for normal.
int random_words_per_element(DType dt);
void fill_uniform(DType dt, void* data, int64_t numel, uint64_t seed, uint64_t offset,
                  double low, double high);
void fill_normal(DType dt, void* data, int64_t numel, uint64_t seed, uint64_t offset,
                 double mean, double stddev);

}  // namespace ember::cpu
