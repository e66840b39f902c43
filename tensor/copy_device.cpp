// copy_ between devices: CPU <-> CUDA through pinned staging buffers, and CUDA <->
// CUDA between two GPUs. The bytes that cross are always contiguous and already
// in the destination's dtype: conversion and re-striding happen on one side, where
// a kernel does them, never element by element across the bus.
#include "tensor/copy_device.h"

#include "tensor/backend.h"
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

#if EMBER_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/pinned.h"
#include "kernels/cuda/runtime.h"
#endif

namespace ember {

void copy_between_devices(Tensor& dst, const Tensor& src, bool non_blocking) {
#if EMBER_HAVE_CUDA
  NoGradGuard no_grad;
  // Kernels, events and copies queued on a GPU's stream need that GPU current (a
  // launch into another device's stream fails), so each step below runs under a
  // scope of the device whose stream it uses (index -1, the CPU: no change).
  const int src_gpu = src.device().is_cuda() ? src.device().index() : -1;
  const int dst_gpu = dst.device().is_cuda() ? dst.device().index() : -1;
  // Source side: broadcast, convert and make contiguous where the source lives.
  Tensor from;
  {
    cuda::DeviceScope on(src_gpu);
    from = src.expand(dst.shape()).to(src.device(), dst.dtype()).contiguous();
  }
  // Destination side: receive into dst itself when it is contiguous, else into a
  // contiguous buffer that a same-device copy_ then scatters into dst's strides.
  Tensor into = dst.is_contiguous() ? dst : empty(dst.shape(), {dst.dtype(), dst.device()});
  const size_t nbytes = static_cast<size_t>(from.numel()) * dtype_size(from.dtype());
  if (nbytes > 0) {
    if (src.device().is_cpu()) {
      cuda::DeviceScope on(dst_gpu);
      cuda::host_to_device(into.data_ptr(), from.data_ptr(), nbytes, stream_of(into), !non_blocking);
    } else if (dst.device().is_cpu()) {
      cuda::DeviceScope on(src_gpu);
      cuda::device_to_host(into.data_ptr(), from.data_ptr(), nbytes, stream_of(from));
    } else {
      cuda::DeviceScope on(src_gpu);
      // GPU to GPU: order after the work queued on both streams, copy, then wait,
      // since the two devices' streams know nothing of each other.
      EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_of(into)));
      EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(into.data_ptr(), into.device().index(), from.data_ptr(),
                                           from.device().index(), nbytes, stream_of(from)));
      EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_of(from)));
    }
  }
  if (!into.is_same(dst)) {
    cuda::DeviceScope on(dst_gpu);
    dst.copy_(into);
  }
#else
  (void)non_blocking;
  throw_no_kernel("copy_", dst.device().is_cuda() ? dst : src);
#endif
}

}  // namespace ember
