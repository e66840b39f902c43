// copy_ between devices: CPU <-> CUDA through pinned staging buffers, CUDA <-> CUDA
// between two GPUs, and the same moves for the emulated device (tensor/emu.h), whose
// memory is host memory. The bytes that cross are always contiguous and already in
// the destination's dtype: conversion and re-striding happen on one side, where a
// kernel does them, never element by element across the bus. The steps are the same
// for every device, so tests on emu run the path CUDA takes.
#include "tensor/copy_device.h"

#include "tensor/backend.h"
#include "tensor/checks.h"
#include "tensor/emu.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

#if EMBER_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/pinned.h"
#include "kernels/cuda/runtime.h"
#endif

namespace ember {
namespace {

// Moves nbytes from the contiguous `from` into the contiguous `into`, on another device.
void move_bytes(Tensor& into, const Tensor& from, size_t nbytes, bool non_blocking) {
  const Device s = from.device(), d = into.device();
  if (s.is_emu() || d.is_emu()) {
    const emu::Transfer kind = s.is_cpu()   ? emu::Transfer::HostToDevice
                               : d.is_cpu() ? emu::Transfer::DeviceToHost
                                            : emu::Transfer::DeviceToDevice;
    emu::transfer(into.data_ptr(), from.data_ptr(), nbytes, kind, non_blocking);
    return;
  }
#if EMBER_HAVE_CUDA
  // Kernels, events and copies queued on a GPU's stream need that GPU current (a
  // launch into another device's stream fails); stream_of makes it so for its call.
  if (s.is_cpu()) {
    cuda::host_to_device(into.data_ptr(), from.data_ptr(), nbytes, stream_of(into), !non_blocking);
  } else if (d.is_cpu()) {
    cuda::device_to_host(into.data_ptr(), from.data_ptr(), nbytes, stream_of(from));
  } else {
    // GPU to GPU: order after the work queued on both streams, copy, then wait,
    // since the two devices' streams know nothing of each other.
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_of(into)));
    ScopedDevice on(s);
    EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(into.data_ptr(), d.index(), from.data_ptr(), s.index(), nbytes,
                                         stream_of(from)));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_of(from)));
  }
#else
  (void)nbytes;
  (void)non_blocking;
  throw_no_kernel("copy_", d.is_cuda() ? into : from);
#endif
}

// Whether bytes move between the two devices directly; CUDA and emu meet on the host.
bool direct(const Device& a, const Device& b) { return !((a.is_cuda() && b.is_emu()) || (a.is_emu() && b.is_cuda())); }

}  // namespace

void copy_between_devices(Tensor& dst, const Tensor& src, bool non_blocking) {
  NoGradGuard no_grad;
  if (!direct(src.device(), dst.device())) {
    dst.copy_(src.to(kCPU), non_blocking);
    return;
  }
  // Source side: broadcast, convert and make contiguous where the source lives.
  Tensor from = src.expand(dst.shape()).to(src.device(), dst.dtype()).contiguous();
  // Destination side: receive into dst itself when it is contiguous, else into a
  // contiguous buffer that a same-device copy_ then scatters into dst's strides.
  Tensor into = dst.is_contiguous() ? dst : empty(dst.shape(), {dst.dtype(), dst.device()});
  const size_t nbytes = static_cast<size_t>(from.numel()) * dtype_size(from.dtype());
  if (nbytes > 0) move_bytes(into, from, nbytes, non_blocking);
  if (!into.is_same(dst)) dst.copy_(into);
}

}  // namespace ember
