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
// Kernels launch on the current device, and grid sizes and scratch memory come from
// it too, so the tensor's device is made current first (and stays current, as a
// CUDA program would leave it: one cudaGetDevice when it already is).
cudaStream_t stream_of(const Tensor& t) {
  const int d = t.device().index();
  if (d >= 0 && cuda::current_device_index() != d) cuda::set_device_index(d);
  return cuda::stream(d);
}
#endif

}  // namespace ember
