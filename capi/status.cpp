// The C API's boundary: exceptions to status codes, the per-thread last error
// message, the status names, and the argument checks every entry point shares.
#include <new>
#include <string>

#include "capi/capi_internal.h"
#include "kernels/base/error.h"

namespace ember::capi {
namespace {

// One message per thread, so that concurrent calls do not overwrite each other's.
thread_local std::string last_error;

}  // namespace

ember_status fail(ember_status status, const char* message) {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still says what happened
  }
  return status;
}

ember_status status_of_current_exception() {
  // Most derived first: every ember class derives from ember::Error.
  try {
    throw;
  } catch (const InvalidArgument& e) {
    return fail(EMBER_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const DeviceError& e) {
    return fail(EMBER_ERROR_DEVICE, e.what());
  } catch (const DTypeError& e) {
    return fail(EMBER_ERROR_DTYPE, e.what());
  } catch (const ShapeError& e) {
    return fail(EMBER_ERROR_SHAPE, e.what());
  } catch (const IndexError& e) {
    return fail(EMBER_ERROR_INDEX, e.what());
  } catch (const ValueError& e) {
    return fail(EMBER_ERROR_VALUE, e.what());
  } catch (const NotImplementedError& e) {
    return fail(EMBER_ERROR_NOT_IMPLEMENTED, e.what());
  } catch (const OutOfMemoryError& e) {
    return fail(EMBER_ERROR_OUT_OF_MEMORY, e.what());
  } catch (const CudaError& e) {
    return fail(EMBER_ERROR_CUDA, e.what());
  } catch (const FormatError& e) {
    return fail(EMBER_ERROR_FORMAT, e.what());
  } catch (const DistError& e) {
    return fail(EMBER_ERROR_DIST, e.what());
  } catch (const std::bad_alloc& e) {
    return fail(EMBER_ERROR_OUT_OF_MEMORY, e.what());
  } catch (const std::exception& e) {
    return fail(EMBER_ERROR_INTERNAL, e.what());
  } catch (...) {
    // Unreachable through the API (the library throws std::exceptions only); kept so
    // that nothing can cross the boundary.
    return fail(EMBER_ERROR_INTERNAL, "unknown exception");
  }
}

void require(const void* p, const char* function, const char* name) {
  if (!p) throw InvalidArgument(std::string(function) + ": " + name + " is NULL");
}

}  // namespace ember::capi

extern "C" {

EMBER_C_API const char* ember_status_name(ember_status status) {
  switch (status) {
    case EMBER_OK: return "EMBER_OK";
    case EMBER_ERROR_DEVICE: return "EMBER_ERROR_DEVICE";
    case EMBER_ERROR_DTYPE: return "EMBER_ERROR_DTYPE";
    case EMBER_ERROR_SHAPE: return "EMBER_ERROR_SHAPE";
    case EMBER_ERROR_INDEX: return "EMBER_ERROR_INDEX";
    case EMBER_ERROR_VALUE: return "EMBER_ERROR_VALUE";
    case EMBER_ERROR_NOT_IMPLEMENTED: return "EMBER_ERROR_NOT_IMPLEMENTED";
    case EMBER_ERROR_OUT_OF_MEMORY: return "EMBER_ERROR_OUT_OF_MEMORY";
    case EMBER_ERROR_CUDA: return "EMBER_ERROR_CUDA";
    case EMBER_ERROR_FORMAT: return "EMBER_ERROR_FORMAT";
    case EMBER_ERROR_DIST: return "EMBER_ERROR_DIST";
    case EMBER_ERROR_INVALID_ARGUMENT: return "EMBER_ERROR_INVALID_ARGUMENT";
    case EMBER_ERROR_INTERNAL: return "EMBER_ERROR_INTERNAL";
    case EMBER_STATUS_INT_MIN_: case EMBER_STATUS_INT_MAX_: break;
  }
  return "EMBER_STATUS_UNKNOWN";  // a value a C caller made up
}

EMBER_C_API const char* ember_last_error(void) { return ember::capi::last_error.c_str(); }

}  // extern "C"
