// Vectorized half <-> float conversions (see half_vec.h): each call goes to the table
// of the active instruction set (half_vec_<isa>.cpp), so the library still runs on a
// CPU without F16C.
#include "kernels/cpu/half_vec.h"

#include "kernels/cpu/half_vec_kernels.h"
#include "kernels/cpu/isa.h"

namespace ember::cpu {
namespace {

const half_vec_detail::HalfVecKernels& kernels() {
  using namespace half_vec_detail;
  static const PerIsa<HalfVecKernels> tables(
      half_vec_kernels_generic(), half_vec_kernels_avx2(),
      half_vec_kernels_avx512(), nullptr);
  return tables.pick();
}

}  // namespace

void load_to_float(const Half* src, float* dst, int64_t n) { kernels().load_half(src, dst, n); }
void store_from_float(const float* src, Half* dst, int64_t n) { kernels().store_half(src, dst, n); }
void load_to_float(const BFloat16* src, float* dst, int64_t n) { kernels().load_bf16(src, dst, n); }
void store_from_float(const float* src, BFloat16* dst, int64_t n) { kernels().store_bf16(src, dst, n); }
void add_to_float(const Half* src, float* acc, int64_t n) { kernels().add_half(src, acc, n); }
void add_to_float(const BFloat16* src, float* acc, int64_t n) { kernels().add_bf16(src, acc, n); }
const char* half_conversion_path() { return kernels().name; }

}  // namespace ember::cpu
