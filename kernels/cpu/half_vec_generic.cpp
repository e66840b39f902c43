// half <-> float conversions for any CPU: float16 one element at a time, bfloat16
// in whatever vectors the baseline has (half_vec_impl.h).
#include <cstdint>
#include <cstring>

#include "kernels/cpu/half_vec_kernels.h"
#include "kernels/cpu/half_vec_impl.h"

namespace ember::cpu::half_vec_detail {
namespace {
constexpr HalfVecKernels kSet{"generic", load_half_scalar, store_half_scalar, load_bf16, store_bf16, add_half_scalar,
                              add_bf16, nullptr, nullptr};
}  // namespace

const HalfVecKernels* half_vec_kernels_generic() { return &kSet; }

}  // namespace ember::cpu::half_vec_detail
