// The quantize and min/max loops (quantize_int8_impl.h) compiled for AVX2.
#include <cstdint>
#include <cstring>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/quantize_int8_kernels.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX2)
#include "kernels/cpu/quantize_int8_impl.h"
namespace ember::cpu::quantize_detail {
namespace {
constexpr QuantizeKernels kSet{"avx2", quantize_row_u8, quantize_row_s8, min_max_serial, divide_row_u8, divide_row_s8,
                               requantize_row_u8, requantize_row_s8};
}  // namespace
}  // namespace ember::cpu::quantize_detail
EMBER_ISA_END

namespace ember::cpu::quantize_detail {
const QuantizeKernels* quantize_kernels_avx2() { return &kSet; }
}  // namespace ember::cpu::quantize_detail

#else

namespace ember::cpu::quantize_detail {
const QuantizeKernels* quantize_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::quantize_detail

#endif
