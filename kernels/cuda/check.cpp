// The status checks behind EMBER_CUDA_CHECK: one overload per library, each turning
// a failed status into CudaError (or OutOfMemoryError) with the library's own words.
#include "kernels/cuda/check.h"

#include <string>

#include "kernels/base/error.h"

namespace ember::cuda {
namespace {

[[noreturn]] void raise(const char* call, const std::string& description, const char* name, const char* file,
                        int line) {
  throw CudaError(std::string(call) + " failed: " + description + " (" + name + ") at " + file + ":" +
                  std::to_string(line));
}

}  // namespace

void check_status(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  // Clear the thread's last error: a caller that catches this and goes on would
  // otherwise see it again at the next launch check (EMBER_CUDA_CHECK_LAUNCH reads
  // cudaGetLastError) and blame an unrelated kernel. Sticky errors stay regardless.
  cudaGetLastError();
  if (status == cudaErrorMemoryAllocation) {
    throw OutOfMemoryError(std::string("CUDA out of memory in ") + call + " at " + file + ":" + std::to_string(line));
  }
  raise(call, cudaGetErrorString(status), cudaGetErrorName(status), file, line);
}

void check_launch(const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaErrorNotReady) return;
  check_status(status, "kernel launch", file, line);
}

void check_status(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  raise(call, cublasGetStatusString(status), cublasGetStatusName(status), file, line);
}

#if EMBER_HAVE_CUDNN
void check_status(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const std::string name = "cudnnStatus_t " + std::to_string(static_cast<int>(status));
  raise(call, cudnnGetErrorString(status), name.c_str(), file, line);
}
#endif

#if EMBER_HAVE_NCCL
void check_status(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  std::string detail = ncclGetErrorString(status);
  if (const char* last = ncclGetLastError(nullptr); last && *last) detail += std::string(": ") + last;
  const std::string name = "ncclResult_t " + std::to_string(static_cast<int>(status));
  raise(call, detail, name.c_str(), file, line);
}
#endif

}  // namespace ember::cuda
