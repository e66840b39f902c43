// Picks the transposing block copy of the active instruction set (transpose.h).
#include "kernels/cpu/transpose.h"

#include "kernels/cpu/isa.h"

namespace ember::cpu {

transpose_detail::Transpose32 transpose32() {
  using namespace transpose_detail;
  static const TransposeKernels generic = {"generic", nullptr};
  static const PerIsa<TransposeKernels> tables(&generic, nullptr, transpose_kernels_avx512(), nullptr);
  return tables.pick().t32;
}

}  // namespace ember::cpu
