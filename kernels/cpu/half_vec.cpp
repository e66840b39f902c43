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
bool half_arith(HalfArithOp op, const Half* a, int64_t a_step, const Half* b, int64_t b_step, Half* out, int64_t n) {
  const auto f = kernels().arith_half;
  if (f) f(op, a, a_step, b, b_step, out, n);
  return f != nullptr;
}
bool half_arith(HalfArithOp op, const BFloat16* a, int64_t a_step, const BFloat16* b, int64_t b_step, BFloat16* out,
                int64_t n) {
  const auto f = kernels().arith_bf16;
  if (f) f(op, a, a_step, b, b_step, out, n);
  return f != nullptr;
}
const char* half_conversion_path() { return kernels().name; }

}  // namespace ember::cpu
