// What the C API's source files share and the header does not show: the handle
// structs (each wraps one C++ object), the boundary guard that turns exceptions
// into status codes, and the checks of the C layer's own (NULL, enum values).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "capi/ember_c.h"
#include "nn/module.h"
#include "tensor/device.h"
#include "tensor/tensor.h"

struct ember_tensor {
  ember::Tensor tensor;
};

struct ember_model {
  std::shared_ptr<ember::nn::Module> module;
  ember::Device device;
  size_t num_inputs = 1;
  size_t num_outputs = 1;
};

namespace ember::capi {

// Raised by the C layer for what it checks itself; the guard maps it to
// EMBER_ERROR_INVALID_ARGUMENT. Not an ember::Error: the C++ library never raises it.
class InvalidArgument : public std::runtime_error {
 public:
  explicit InvalidArgument(const std::string& msg) : std::runtime_error(msg) {}
};

// Stores the message for ember_last_error() and returns `status`.
ember_status fail(ember_status status, const char* message);

// Maps the exception being handled to its status and stores its message. Call only
// inside a catch block.
ember_status status_of_current_exception();

// Runs body() and returns EMBER_OK, or the status of whatever it threw. Every C
// entry point that can fail is `return guard([&] { ... });`.
template <class Body>
ember_status guard(Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    return EMBER_OK;
  } catch (...) {
    return status_of_current_exception();
  }
}

// "{function}: {name} is NULL" (InvalidArgument) when p is null.
void require(const void* p, const char* function, const char* name);

// Sets *out to null first, so that it is null whenever the call fails.
template <class T>
void clear_out(T** out, const char* function) {
  require(out, function, "out");
  *out = nullptr;
}

// ember_dtype -> ember::DType; "{function}: invalid dtype {value}" (InvalidArgument)
// for a value outside the enum.
DType to_dtype(ember_dtype dtype, const char* function);
ember_dtype from_dtype(DType dtype);

// Parses a device string with ember::Device's parser; a malformed string raises
// DeviceError (the parser's ValueError, same message): in the C API every device
// problem has one status.
Device parse_device(const char* spec, const char* function);

}  // namespace ember::capi
