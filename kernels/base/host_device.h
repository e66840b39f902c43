// EMBER_HOST_DEVICE marks a function both backends compile: __host__ __device__
// under nvcc, a plain inline function elsewhere. Code written with it (the scalar
// functors, the direct convolution's per-thread arithmetic) is one definition that
// the CPU kernels or CPU tests run as it is, and the CUDA kernels call per thread.
#pragma once

#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define EMBER_HOST_DEVICE inline
#endif
