// CUDA elementwise kernels: unary and binary functors, where, dtype conversion, fill
// and random fills; the same contract as kernels/cpu/elementwise.h, with device
// pointers in the StridedLoop (strides in BYTES) and the work queued on `stream`.
// Every launcher returns as soon as the work is queued; a bad launch raises
// CudaError, an error inside a kernel surfaces at the next synchronizing call.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/ops.def.h"
#include "kernels/base/scalar.h"
#include "kernels/base/strided.h"

namespace ember::cuda {

// out = op(in); operand 0 is out, 1 is in; both of dtype `dt`. neg/abs/relu take any
// dtype but bool; the other ops take floating dtypes only (the front-end promotes
// integers first); anything else raises DTypeError.
void unary(UnaryOp op, DType dt, const StridedLoop& loop, cudaStream_t stream);
// out = op(a, b); operands out, a, b. a and b have dtype `dt`; out has `dt`, or
// bool for the comparisons.
void binary(BinaryOp op, DType dt, const StridedLoop& loop, cudaStream_t stream);
// out = cond ? a : b; operands out, cond (bool), a, b.
void where(DType dt, const StridedLoop& loop, cudaStream_t stream);
// out = static_cast<dst>(in): round-to-nearest-even to the half types, bool is
// "nonzero", float -> integer saturates (NaN -> 0); bit-identical to cpu::copy.
// With dst == src it is the strided copy behind contiguous(), cat and to().
void copy(DType dst, DType src, const StridedLoop& loop, cudaStream_t stream);
// Contiguous fill. Floating dtypes take `fvalue`, integral ones `ivalue`, bool is
// fvalue != 0 (as on the CPU).
void fill(DType dt, void* data, int64_t numel, double fvalue, int64_t ivalue, cudaStream_t stream);
// Contiguous Philox fills, element for element the numbers cpu::fill_uniform and
// cpu::fill_normal produce for the same (seed, offset). Floating dtypes only.
int random_words_per_element(DType dt);
void fill_uniform(DType dt, void* data, int64_t numel, uint64_t seed, uint64_t offset, double low,
                  double high, cudaStream_t stream);
void fill_normal(DType dt, void* data, int64_t numel, uint64_t seed, uint64_t offset, double mean,
                 double stddev, cudaStream_t stream);

}  // namespace ember::cuda
