// Picks the float32 block-moment loops of the active instruction set (moments.h).
#include "kernels/cpu/moments.h"

#include "kernels/cpu/isa.h"

namespace ember::cpu {

const moments_detail::MomentsKernels* moments_kernels() {
  using namespace moments_detail;
  static const MomentsKernels generic = {"generic", nullptr, nullptr, nullptr};
  static const PerIsa<MomentsKernels> tables(&generic, nullptr, moments_kernels_avx512(), nullptr);
  const MomentsKernels& k = tables.pick();
  return k.sum_f32 ? &k : nullptr;
}

}  // namespace ember::cpu
