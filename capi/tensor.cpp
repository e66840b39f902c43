// The C API's tensors: dtype and device translation, creating a tensor from a copy
// or a view of caller memory, reading its shape, dtype and device, moving it, and
// copying its values out.
#include <cstring>
#include <string>

#include "capi/capi_internal.h"
#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::capi {

// ember_dtype's values are ember::DType's, so translating is a range check and a cast.
static_assert(EMBER_DTYPE_FLOAT32 == int(DType::Float32) && EMBER_DTYPE_FLOAT64 == int(DType::Float64) &&
              EMBER_DTYPE_FLOAT16 == int(DType::Float16) && EMBER_DTYPE_BFLOAT16 == int(DType::BFloat16) &&
              EMBER_DTYPE_INT8 == int(DType::Int8) && EMBER_DTYPE_UINT8 == int(DType::UInt8) &&
              EMBER_DTYPE_INT32 == int(DType::Int32) && EMBER_DTYPE_INT64 == int(DType::Int64) &&
              EMBER_DTYPE_BOOL == int(DType::Bool) && kNumDTypes == 9);

namespace {
bool valid_dtype(ember_dtype dtype) { return int(dtype) >= 0 && int(dtype) < kNumDTypes; }
}  // namespace

DType to_dtype(ember_dtype dtype, const char* function) {
  if (!valid_dtype(dtype))
    throw InvalidArgument(std::string(function) + ": invalid dtype " + std::to_string(int(dtype)));
  return static_cast<DType>(dtype);
}

ember_dtype from_dtype(DType dtype) { return static_cast<ember_dtype>(dtype); }

Device parse_device(const char* spec, const char* function) {
  require(spec, function, "device");
  try {
    return Device(spec);
  } catch (const ValueError& e) {
    throw DeviceError(e.what());
  }
}

namespace {

Shape to_shape(const int64_t* shape, size_t ndim, const char* function) {
  if (ndim > 0) require(shape, function, "shape");
  return Shape(shape, shape + ndim);
}

// The handle owns a copy of the Tensor (a shared reference to its storage).
ember_tensor* new_handle(Tensor t) { return new ember_tensor{std::move(t)}; }

}  // namespace
}  // namespace ember::capi

using namespace ember::capi;

extern "C" {

EMBER_C_API size_t ember_dtype_size(ember_dtype dtype) {
  if (int(dtype) < 0 || int(dtype) >= ember::kNumDTypes) return 0;
  return ember::dtype_size(static_cast<ember::DType>(dtype));
}

EMBER_C_API ember_status ember_tensor_create(const void* data, const int64_t* shape, size_t ndim, ember_dtype dtype,
                                             ember_tensor** out) {
  constexpr const char* fn = "ember_tensor_create";
  return guard([&] {
    clear_out(out, fn);
    const ember::Shape s = to_shape(shape, ndim, fn);
    const ember::DType dt = to_dtype(dtype, fn);
    // The library checks the shape (negative sizes, overflow) before we touch data.
    ember::Tensor t = data ? ember::empty(s, dt) : ember::zeros(s, dt);
    if (data && t.nbytes() > 0) std::memcpy(t.data_ptr(), data, t.nbytes());
    *out = new_handle(std::move(t));
  });
}

EMBER_C_API ember_status ember_tensor_borrow(void* data, const int64_t* shape, size_t ndim, ember_dtype dtype,
                                             void (*release)(void* data, void* user), void* user,
                                             ember_tensor** out) {
  constexpr const char* fn = "ember_tensor_borrow";
  return guard([&] {
    clear_out(out, fn);
    const ember::Shape s = to_shape(shape, ndim, fn);
    const ember::DType dt = to_dtype(dtype, fn);
    // The storage calls the deleter once, when its last tensor goes; from_blob
    // raises (without calling it) before the storage exists.
    std::function<void(void*)> deleter;
    if (release) deleter = [release, user](void* p) { release(p, user); };
    ember::Tensor t = ember::from_blob(data, s, dt, {}, std::move(deleter));
    *out = new_handle(std::move(t));
  });
}

EMBER_C_API size_t ember_tensor_ndim(const ember_tensor* tensor) {
  return tensor ? static_cast<size_t>(tensor->tensor.dim()) : 0;
}

EMBER_C_API ember_status ember_tensor_shape(const ember_tensor* tensor, int64_t* shape, size_t capacity) {
  constexpr const char* fn = "ember_tensor_shape";
  return guard([&] {
    require(tensor, fn, "tensor");
    const ember::Shape& s = tensor->tensor.shape();
    if (capacity < s.size())
      throw InvalidArgument(std::string(fn) + ": capacity " + std::to_string(capacity) + " is less than ndim " +
                            std::to_string(s.size()));
    if (!s.empty()) require(shape, fn, "shape");
    for (size_t i = 0; i < s.size(); ++i) shape[i] = s[i];
  });
}

EMBER_C_API int64_t ember_tensor_numel(const ember_tensor* tensor) { return tensor ? tensor->tensor.numel() : 0; }

EMBER_C_API ember_dtype ember_tensor_dtype(const ember_tensor* tensor) {
  return tensor ? from_dtype(tensor->tensor.dtype()) : EMBER_DTYPE_UNDEFINED;
}

EMBER_C_API ember_status ember_tensor_device(const ember_tensor* tensor, char* buf, size_t capacity) {
  constexpr const char* fn = "ember_tensor_device";
  return guard([&] {
    require(tensor, fn, "tensor");
    require(buf, fn, "buf");
    const std::string name = tensor->tensor.device().str();
    if (capacity < name.size() + 1)
      throw InvalidArgument(std::string(fn) + ": capacity " + std::to_string(capacity) + " is less than the " +
                            std::to_string(name.size() + 1) + " bytes of \"" + name + "\"");
    std::memcpy(buf, name.c_str(), name.size() + 1);
  });
}

EMBER_C_API ember_status ember_tensor_to(const ember_tensor* tensor, const char* device, ember_tensor** out) {
  constexpr const char* fn = "ember_tensor_to";
  return guard([&] {
    clear_out(out, fn);
    require(tensor, fn, "tensor");
    const ember::Device d = parse_device(device, fn);
    *out = new_handle(tensor->tensor.to(d));
  });
}

EMBER_C_API ember_status ember_tensor_copy_to_buffer(const ember_tensor* tensor, void* dst, size_t nbytes) {
  constexpr const char* fn = "ember_tensor_copy_to_buffer";
  return guard([&] {
    require(tensor, fn, "tensor");
    const ember::Tensor& t = tensor->tensor;
    if (nbytes != t.nbytes())
      throw InvalidArgument(std::string(fn) + ": nbytes is " + std::to_string(nbytes) + " but the tensor holds " +
                            std::to_string(t.nbytes()) + " bytes (" + std::to_string(t.numel()) + " elements of " +
                            ember::dtype_name(t.dtype()) + ")");
    if (nbytes == 0) return;
    require(dst, fn, "dst");
    const ember::Tensor host = t.to(ember::kCPU).contiguous();  // waits for a device's copy
    std::memcpy(dst, host.data_ptr(), nbytes);
  });
}

EMBER_C_API void ember_tensor_free(ember_tensor* tensor) { delete tensor; }

}  // extern "C"
