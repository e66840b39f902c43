// The one checking macro for every CUDA, cuBLAS, cuDNN and NCCL call. A failed call
// raises CudaError naming the call, the library's own description of the status,
// and the file and line; it never exits, so an embedding program can recover.
//   EMBER_CUDA_CHECK(cudaMemcpyAsync(...));
//   my_kernel<<<grid, block, 0, stream>>>(...); EMBER_CUDA_CHECK_LAUNCH();
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "ember_config.h"
#if EMBER_HAVE_CUDNN
#include <cudnn.h>
#endif
#if EMBER_HAVE_NCCL
#include <nccl.h>
#endif

namespace ember::cuda {

// Each throws CudaError("{call} failed: {description} ({name}) at {file}:{line}")
// unless the status is success. cudaErrorMemoryAllocation raises OutOfMemoryError
// instead, since that is the type callers catch to retry with less memory.
void check_status(cudaError_t status, const char* call, const char* file, int line);
void check_status(cublasStatus_t status, const char* call, const char* file, int line);
#if EMBER_HAVE_CUDNN
void check_status(cudnnStatus_t status, const char* call, const char* file, int line);
#endif
#if EMBER_HAVE_NCCL
void check_status(ncclResult_t status, const char* call, const char* file, int line);
#endif
// The check after a kernel launch: the thread's last error, except "not ready",
// which a cudaStreamQuery or cudaEventQuery (Ember's or the caller's own) may have
// left there and which says nothing about the launch.
void check_launch(const char* file, int line);

}  // namespace ember::cuda

#define EMBER_CUDA_CHECK(call) ::ember::cuda::check_status((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: catches bad launch configurations at once (errors inside
// the kernel surface at the next synchronizing call, which is checked too).
#define EMBER_CUDA_CHECK_LAUNCH() ::ember::cuda::check_launch(__FILE__, __LINE__)
