// DType names, parsing and PyTorch's type promotion. The enum itself lives in
// kernels/base/scalar.h so that kernels can name dtypes too.
#pragma once

#include "kernels/base/export.h"

#include <ostream>
#include <string>

#include "kernels/base/scalar.h"

EMBER_API_BEGIN

namespace ember {

// libtorch-style constants: ember::kFloat32 and so on.
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kInt8 = DType::Int8;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kBool = DType::Bool;

// The dtype of a tensor made from a Python-like float literal.
inline constexpr DType kDefaultFloat = kFloat32;

// Parses "float32", "float", "half", "bfloat16", "int64", "long", ...; ValueError otherwise.
DType parse_dtype(const std::string& name);

// PyTorch's promotion lattice for two dtypes: bool < integers < floating types;
// int8 with uint8 gives int32 (Ember has no int16, PyTorch's answer), float16 with
// bfloat16 gives float32.
DType promote_types(DType a, DType b);

// Whether a value of `from` may be written into a tensor of `to` by an in-place op
// (PyTorch's canCast: no floating -> integral, no integral -> bool).
bool can_cast(DType from, DType to);

std::ostream& operator<<(std::ostream& os, DType d);

}  // namespace ember

EMBER_API_END
