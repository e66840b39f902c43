// Picks the float32 extreme scan of the active instruction set (extreme.h).
#include "kernels/cpu/extreme.h"

#include "kernels/cpu/isa.h"

namespace ember::cpu {

const extreme_detail::ExtremeKernels* extreme_kernels() {
  using namespace extreme_detail;
  static const ExtremeKernels generic = {"generic", nullptr};
  static const PerIsa<ExtremeKernels> tables(&generic, nullptr, extreme_kernels_avx512(), nullptr);
  const ExtremeKernels& k = tables.pick();
  return k.extreme_pos_f32 ? &k : nullptr;
}

}  // namespace ember::cpu
