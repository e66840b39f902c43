// Picks the float32 transcendental kernels of the active instruction set (vmath.h).
#include "kernels/cpu/vmath.h"

#include "kernels/cpu/isa.h"

namespace ember::cpu {
namespace {

const PerIsa<vmath_detail::VmathKernels>& tables() {
  static const PerIsa<vmath_detail::VmathKernels> t(vmath_detail::vmath_kernels_generic(),
                                                    vmath_detail::vmath_kernels_avx2(),
                                                    vmath_detail::vmath_kernels_avx512(), nullptr);
  return t;
}

// The entry for `op` of a table holding the five functions (the float32 table, a
// half type's one-pass kernels), or nullptr for any other op.
template <class Table>
auto function_for(const Table& k, UnaryOp op) -> decltype(k.exp) {
  switch (op) {
    case UnaryOp::exp: return k.exp;
    case UnaryOp::erf: return k.erf;
    case UnaryOp::tanh: return k.tanh;
    case UnaryOp::sigmoid: return k.sigmoid;
    case UnaryOp::gelu: return k.gelu;
    default: return nullptr;
  }
}

}  // namespace

const vmath_detail::VmathKernels& vmath() { return tables().pick(); }

vmath_detail::UnaryF32 vmath_for(UnaryOp op) { return function_for(vmath(), op); }

vmath_detail::UnaryF32 vmath_half_for(UnaryOp op) {
  return op == UnaryOp::exp ? vmath().exp_half : vmath_for(op);
}

vmath_detail::UnaryHalfBits vmath_half_bits_for(UnaryOp op, bool bfloat16) {
  return function_for(bfloat16 ? vmath().bf16 : vmath().f16, op);
}

}  // namespace ember::cpu
