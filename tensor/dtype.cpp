// DType parsing and the promotion rules.
#include "tensor/dtype.h"

#include "kernels/base/error.h"

namespace ember {

DType parse_dtype(const std::string& name) {
  if (name == "float32" || name == "float") return kFloat32;
  if (name == "float64" || name == "double") return kFloat64;
  if (name == "float16" || name == "half") return kFloat16;
  if (name == "bfloat16") return kBFloat16;
  if (name == "int8") return kInt8;
  if (name == "uint8") return kUInt8;
  if (name == "int32" || name == "int") return kInt32;
  if (name == "int64" || name == "long") return kInt64;
  if (name == "bool") return kBool;
  throw ValueError("invalid dtype name: '" + name + "'");
}

namespace {
// Rank within a category: wider types rank higher.
int int_rank(DType d) {
  switch (d) {
    case DType::Int8: return 1;
    case DType::UInt8: return 1;
    case DType::Int32: return 3;
    case DType::Int64: return 4;
    default: return 0;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if (a == kFloat64 || b == kFloat64) return kFloat64;
    if (a == kFloat32 || b == kFloat32) return kFloat32;
    return kFloat32;  // float16 with bfloat16
  }
  // Both integral and different.
  if ((a == kInt8 && b == kUInt8) || (a == kUInt8 && b == kInt8)) return kInt32;
  return int_rank(a) >= int_rank(b) ? a : b;
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

}  // namespace ember
