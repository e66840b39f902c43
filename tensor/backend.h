// Which kernels an op runs: the CPU's, CUDA's, or none (meta tensors have no data).
// Each front-end switches on backend_of(...) and calls kernels/cpu or kernels/cuda
// with the same arguments plus, on CUDA, the stream of the tensor's device. The
// emulated device (`emu`, tensor/emu.h) runs the CPU's kernels on its host memory.
// In a build without CUDA no CUDA tensor can exist (Storage refuses to allocate one),
// and EMBER_CUDA(...) compiles the CUDA branch away (EMBER_CUDA_OR(expr, fallback)
// where the branch is an expression).
//
// Devices with an index (cuda:N, emu:N) have a current device per thread. An op makes
// its tensor's device current while it runs and restores the caller's afterwards (as
// PyTorch's device guard does): backend_of returns an OpBackend that holds the device
// for the op's scope, and stream_of holds it for the call it is an argument of.
#pragma once

#include "ember_config.h"
#include "tensor/tensor.h"

#if EMBER_HAVE_CUDA
#include <cuda_runtime_api.h>
#define EMBER_CUDA(...) __VA_ARGS__
#define EMBER_CUDA_OR(expr, fallback) (expr)
#else
#define EMBER_CUDA(...) ((void)0)
#define EMBER_CUDA_OR(expr, fallback) (fallback)
#endif

namespace ember {

enum class Backend { CPU, CUDA, None };

// Makes `device` the calling thread's current device of its type for a scope, and
// restores the previous one at its end. Nothing happens for cpu and meta, for index
// -1, or when the device is current already (no driver call, no switch counted).
class ScopedDevice {
 public:
  explicit ScopedDevice(const Device& device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  DeviceType type_ = DeviceType::CPU;
  int previous_ = -1;  // -1: nothing to restore
};

// A bare "cuda" or "emu" (index -1) names the calling thread's current device of that
// type; other devices are returned as they are.
Device resolve_device(const Device& device);

// backend_of's answer: the backend, with the tensor's device current while it is held
// (`const OpBackend backend = backend_of(...)` holds it for the op; it converts to
// Backend for comparisons and switches).
class OpBackend {
 public:
  OpBackend(Backend backend, const Device& device) : backend_(backend), scope_(device) {}
  operator Backend() const { return backend_; }

 private:
  Backend backend_;
  ScopedDevice scope_;
};

// The backend for an op whose data lives where `t` lives. A CUDA tensor in a build
// without CUDA (impossible through the public API) raises NotImplementedError.
OpBackend backend_of(const char* op, const Tensor& t);

#if EMBER_HAVE_CUDA
// Ember's stream on a tensor's device (every op on that device is queued on it, in
// order), with that device current until the end of the full expression that asked
// for it: kernels launch on the current device, and grid sizes and scratch memory
// come from it. Pass it straight to the launcher (`cuda::relu(..., stream_of(t))`).
class ScopedStream {
 public:
  explicit ScopedStream(const Tensor& t);
  operator cudaStream_t() const { return stream_; }

 private:
  ScopedDevice scope_;
  cudaStream_t stream_;
};
inline ScopedStream stream_of(const Tensor& t) { return ScopedStream(t); }
#endif

}  // namespace ember
