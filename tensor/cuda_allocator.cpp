// Storage on CUDA devices comes from the caching allocator in kernels/cuda; this
// adapter is what Storage sees. It exists only in CUDA builds and only when a device
// is present: otherwise Storage finds no CUDA allocator and raises DeviceError.
#include "ember_config.h"

#if EMBER_HAVE_CUDA
#include "kernels/base/error.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/runtime.h"
#include "tensor/storage.h"

namespace ember {
namespace {

class CudaAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, const Device& device) override {
    const int d = device.index() < 0 ? cuda::current_device_index() : device.index();
    if (d >= cuda::device_count_or_zero())
      throw DeviceError("CUDA error: invalid device ordinal " + std::to_string(d) + " (" +
                        std::to_string(cuda::device_count_or_zero()) + " devices)");
    return cuda::caching_malloc(nbytes, d, cuda::stream(d));
  }
  void deallocate(void* ptr, size_t, const Device&) override { cuda::caching_free(ptr); }
};

}  // namespace

Allocator* cuda_allocator() {
  static CudaAllocator allocator;
  return cuda::device_count_or_zero() > 0 ? &allocator : nullptr;
}

}  // namespace ember
#endif
