// build_info.h: the build's backends (ember_config.h) and the CPU kernels chosen.
#include "tensor/build_info.h"

#include "ember_config.h"
#include "kernels/cpu/gemm_int8.h"
#include "kernels/cpu/isa.h"

namespace ember {
namespace {
const char* on_off(bool on) { return on ? "on" : "off"; }
}  // namespace

std::string cpu_kernels() { return cpu::isa_name(cpu::active_isa()); }

std::string int8_gemm_kernel() { return cpu::gemm_int8_kernel_name(); }

std::string build_info() {
  return std::string("ember ") + EMBER_VERSION + " cuda=" + on_off(EMBER_HAVE_CUDA) +
         " cudnn=" + on_off(EMBER_HAVE_CUDNN) + " nccl=" + on_off(EMBER_HAVE_NCCL) +
         " mpi=" + on_off(EMBER_HAVE_MPI) + " zlib=" + on_off(EMBER_HAVE_ZLIB) + " cpu_kernels=" + cpu_kernels();
}

}  // namespace ember
