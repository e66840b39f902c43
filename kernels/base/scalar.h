// The element types Ember stores, shared by every layer (kernels included).
// EMBER_FORALL_DTYPES is the single list: the enum, the size table, the C++ type
// mapping and the dtype switch in dispatch.h are all generated from it.
#pragma once

#include "kernels/base/export.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/base/half.h"

EMBER_API_BEGIN

namespace ember {

// X(Enum, C++ type, name)
#define EMBER_FORALL_DTYPES(X)       \
  X(Float32, float, "float32")       \
  X(Float64, double, "float64")      \
  X(Float16, ::ember::Half, "float16") \
  X(BFloat16, ::ember::BFloat16, "bfloat16") \
  X(Int8, int8_t, "int8")            \
  X(UInt8, uint8_t, "uint8")         \
  X(Int32, int32_t, "int32")         \
  X(Int64, int64_t, "int64")         \
  X(Bool, bool, "bool")

enum class DType : uint8_t {
#define EMBER_X(E, T, N) E,
  EMBER_FORALL_DTYPES(EMBER_X)
#undef EMBER_X
};

inline constexpr int kNumDTypes = 9;

// C++ type -> DType.
template <class T> struct dtype_of;
#define EMBER_X(E, T, N) \
  template <> struct dtype_of<T> { static constexpr DType value = DType::E; };
EMBER_FORALL_DTYPES(EMBER_X)
#undef EMBER_X
template <class T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

constexpr size_t dtype_size(DType d) {
  switch (d) {
#define EMBER_X(E, T, N) case DType::E: return sizeof(T);
    EMBER_FORALL_DTYPES(EMBER_X)
#undef EMBER_X
  }
  return 0;
}

constexpr const char* dtype_name(DType d) {
  switch (d) {
#define EMBER_X(E, T, N) case DType::E: return N;
    EMBER_FORALL_DTYPES(EMBER_X)
#undef EMBER_X
  }
  return "?";
}

constexpr bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}
constexpr bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }
constexpr bool is_integral(DType d, bool include_bool) {
  return d == DType::Int8 || d == DType::UInt8 || d == DType::Int32 || d == DType::Int64 ||
         (include_bool && d == DType::Bool);
}

// Arithmetic type used to compute on a stored T: half types compute in float32,
// narrow integers in their own type (PyTorch wraps on overflow the same way).
template <class T> struct acc_type { using type = T; };
template <> struct acc_type<Half> { using type = float; };
template <> struct acc_type<BFloat16> { using type = float; };
template <class T> using acc_t = typename acc_type<T>::type;

template <class T> inline constexpr bool is_half_v =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T> inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_half_v<T>;

}  // namespace ember

EMBER_API_END
