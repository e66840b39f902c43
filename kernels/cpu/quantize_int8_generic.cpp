// The quantize and min/max loops (quantize_int8_impl.h) for any CPU.
#include <cstdint>
#include <cstring>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/quantize_int8_kernels.h"

#include "kernels/cpu/quantize_int8_impl.h"

namespace ember::cpu::quantize_detail {
namespace {
constexpr QuantizeKernels kSet{"generic", quantize_row_u8, quantize_row_s8, min_max_serial, divide_row_u8, divide_row_s8,
                               requantize_row_u8, requantize_row_s8};
}  // namespace

const QuantizeKernels* quantize_kernels_generic() { return &kSet; }

}  // namespace ember::cpu::quantize_detail
