// Independent float64 references for the tensor tests. Nothing here calls the
// library's copy, conversion or math: tensors are read element by element through
// their sizes, strides and storage offset, half types are decoded with the bit
// conversions of kernels/base/half.h (themselves checked exhaustively in
// test_dtype.cpp), and expected values are computed with plain loops in double.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ember.h"

namespace ref {

using ember::DType;
using ember::Shape;
using ember::Tensor;

int64_t numel(const Shape& s);
// Row-major multi-index of linear position i in shape s.
std::vector<int64_t> unravel(int64_t i, const Shape& s);
// Broadcast shape of a and b (the test's own rule: right-aligned, 1 stretches).
Shape broadcast(const Shape& a, const Shape& b);

// One stored element of dtype dt at p, decoded to double; and the reverse for
// building inputs (half types round through half.h's float conversions).
double load(const void* p, DType dt);
void store(void* p, DType dt, double v);

// Value v as the dtype would hold it: rounded for floating types, wrapped modulo
// 2^bits for integers (as C++ and PyTorch do), nonzero-ness for bool.
double cast(double v, DType dt);

// A dense float64 array in row-major order.
struct Array {
  Shape shape;
  std::vector<double> v;
  // Element at the multi-index `idx` of a shape `out` that this array broadcasts to.
  double at_broadcast(const std::vector<int64_t>& idx) const;
};

// `a` broadcast to `shape` and written out densely (shape must be a broadcast of a.shape).
Array expand(const Array& a, const Shape& shape);

// Reads a CPU tensor through its raw memory: storage()->data(), storage_offset(),
// sizes and strides. Never uses contiguous(), to() or copy_().
Array read(const Tensor& t);

// A fresh contiguous tensor written element by element from values.
Tensor make(const Shape& shape, DType dt, const std::vector<double>& values);

// Random values for dtype dt: uniform in [lo, hi] for floating types (then rounded
// to dt), uniform integers in [lo, hi] for integer types, coin flips for bool.
std::vector<double> random_values(int64_t n, DType dt, std::mt19937_64& rng, double lo, double hi);

// How an input tensor of logical shape `shape` is laid out in memory.
enum class Layout { contiguous, transposed, sliced, expanded, permuted };
const char* layout_name(Layout l);
// Whether `l` can produce a tensor of this shape (transposed/permuted need >= 2 dims,
// sliced and expanded >= 1).
bool layout_applies(Layout l, const Shape& shape);
// A random tensor of logical shape `shape` and dtype dt with the given layout:
// transposed: the last two dims swapped in memory; sliced: dim 0 taken with step 2
// from a larger base (non-zero offset); expanded: dim 0 broadcast from size 1
// (stride 0); permuted: dims reversed in memory.
Tensor random_tensor(const Shape& shape, DType dt, Layout l, std::mt19937_64& rng, double lo, double hi);
// The same layouts with the base's values from values(n) (n = the base's numel).
Tensor layout_tensor(const Shape& shape, DType dt, Layout l, const std::function<std::vector<double>(int64_t)>& values);

struct Tol {
  double rtol, atol;
};
// Elementwise tolerance of a result stored in dt: float32 1e-5, float16 1e-3,
// bfloat16 1e-2 (relative), float64 1e-12, integers and bool exact.
Tol tol_for(DType dt);

// Compares a tensor with the expected array: same shape, |got - want| <= atol +
// rtol * |want| everywhere (NaN matches NaN, infinities must match exactly).
// Returns "" on success, else a description of the first mismatch and the count.
std::string compare(const Tensor& got, const Array& want, Tol tol);

// Like compare, with a separate allowed absolute error for each element.
std::string compare_within(const Tensor& got, const Array& want, const std::vector<double>& allowed);

std::string str(const Shape& s);
std::string str(DType d);

}  // namespace ref

// CHECK_MATCH(tensor, array, tol): passes when ref::compare finds no mismatch; on
// failure Catch prints the first mismatching element.
// (Variadic so that braced arguments with commas need no extra parentheses.)
#define CHECK_MATCH(...) CHECK(ref::compare(__VA_ARGS__) == std::string())
#define REQUIRE_MATCH(...) REQUIRE(ref::compare(__VA_ARGS__) == std::string())
