// backend_of and stream_of (see backend.h).
#include "tensor/backend.h"

#include "tensor/checks.h"

#if EMBER_HAVE_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace ember {

Backend backend_of(const char* op, const Tensor& t) {
  switch (t.device().type()) {
    case DeviceType::CPU: return Backend::CPU;
    case DeviceType::Meta: return Backend::None;
    case DeviceType::CUDA:
      if (!EMBER_HAVE_CUDA) throw_no_kernel(op, t);
      return Backend::CUDA;
  }
  return Backend::None;
}

#if EMBER_HAVE_CUDA
cudaStream_t stream_of(const Tensor& t) { return cuda::stream(t.device().index()); }
#endif

}  // namespace ember
