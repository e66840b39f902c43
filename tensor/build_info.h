// What this build of Ember has and which CPU kernels it chose on this machine, for
// logs and bug reports (the CPU kernels are picked at run time: kernels/cpu/isa.h).
#pragma once

#include "kernels/base/export.h"

#include <string>

EMBER_API_BEGIN

namespace ember {

// The instruction-set level the CPU kernels use now: "generic", "avx2", "avx512",
// "avx512_vnni", ...
std::string cpu_kernels();
// The int8 GEMM kernel quantized layers use now: "vnni512" or "generic".
std::string int8_gemm_kernel();
// One line: "ember 0.1.0 cuda=on cudnn=on nccl=on mpi=on zlib=on cpu_kernels=avx512_vnni".
std::string build_info();

}  // namespace ember

EMBER_API_END
