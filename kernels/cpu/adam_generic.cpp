// adam_impl.h's float32 range loop for the baseline target (4 lanes on x86-64).
#include <cmath>
#include <cstdint>

#include "kernels/cpu/adam_kernels.h"
#include "kernels/cpu/adam_impl.h"

namespace ember::cpu::adam_detail {
namespace {
constexpr AdamKernels kSet = adam_table("generic");
}  // namespace

const AdamKernels* adam_kernels_generic() { return &kSet; }

}  // namespace ember::cpu::adam_detail
