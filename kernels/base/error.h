// Ember's exception hierarchy. Every error Ember raises derives from ember::Error
// (a std::runtime_error) and what() is exactly the message documented in
// docs/errors.md. It lives at the bottom layer because kernels (the CUDA checking
// macro, for one) raise these too.
#pragma once

#include "kernels/base/export.h"

#include <stdexcept>
#include <string>

EMBER_API_BEGIN

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

#define EMBER_DECLARE_ERROR(Name)                                   \
  class Name : public Error {                                      \
   public:                                                         \
    explicit Name(const std::string& msg) : Error(msg) {}          \
  };
EMBER_DECLARE_ERROR(DeviceError)
EMBER_DECLARE_ERROR(DTypeError)
EMBER_DECLARE_ERROR(ShapeError)
EMBER_DECLARE_ERROR(IndexError)
EMBER_DECLARE_ERROR(ValueError)
EMBER_DECLARE_ERROR(NotImplementedError)
EMBER_DECLARE_ERROR(OutOfMemoryError)
EMBER_DECLARE_ERROR(CudaError)
EMBER_DECLARE_ERROR(FormatError)
EMBER_DECLARE_ERROR(DistError)
#undef EMBER_DECLARE_ERROR

}  // namespace ember

EMBER_API_END
