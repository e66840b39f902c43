// Which kernels an op runs: the CPU's, CUDA's, or none (meta tensors have no data).
// Each front-end switches on backend_of(...) and calls kernels/cpu or kernels/cuda
// with the same arguments plus, on CUDA, the stream of the tensor's device. In a
// build without CUDA no CUDA tensor can exist (Storage refuses to allocate one), and
// EMBER_CUDA(...) compiles the CUDA branch away (EMBER_CUDA_OR(expr, fallback)
// where the branch is an expression).
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

// The backend for an op whose data lives where `t` lives. A CUDA tensor in a build
// without CUDA (impossible through the public API) raises NotImplementedError.
Backend backend_of(const char* op, const Tensor& t);

#if EMBER_HAVE_CUDA
// Ember's stream on t's device (every op on that device is queued on it, in order);
// makes t's device the calling thread's current device, where kernels launch.
cudaStream_t stream_of(const Tensor& t);
#endif

}  // namespace ember
