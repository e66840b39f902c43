// Turning a run-time DType into a compile-time C++ type. Call as
//   dispatch(dt, [&]<class T>() { kernel<T>(...); });
// The switch is compiled with -Werror=switch, so a new dtype that is not handled
// stops the build instead of falling through at run time.
#pragma once

#include <string>

#include "kernels/base/error.h"
#include "kernels/base/scalar.h"

namespace ember {

template <class F>
decltype(auto) dispatch(DType dt, F&& f) {
  switch (dt) {
#define EMBER_X(E, T, N) case DType::E: return f.template operator()<T>();
    EMBER_FORALL_DTYPES(EMBER_X)
#undef EMBER_X
  }
  __builtin_unreachable();
}

// Only the four floating types (half types included). Any other dtype throws
// NotImplementedError("{op}: no kernel for device {device} and dtype {dtype}"): the
// front-ends filter dtypes first, but a kernel called directly must not run on.
template <class F>
decltype(auto) dispatch_floating(DType dt, const char* op, const char* device, F&& f) {
  switch (dt) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Float16: return f.template operator()<Half>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Int8: case DType::UInt8: case DType::Int32: case DType::Int64: case DType::Bool:
      break;
  }
  throw NotImplementedError(std::string(op) + ": no kernel for device " + device + " and dtype " +
                            dtype_name(dt));
}

}  // namespace ember
