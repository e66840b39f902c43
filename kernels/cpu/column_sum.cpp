// Picks the float32 column-sum row adds of the active instruction set (column_sum.h).
#include "kernels/cpu/column_sum.h"

#include "kernels/cpu/isa.h"

namespace ember::cpu {

const column_sum_detail::ColumnSumKernels* column_sum_kernels() {
  using namespace column_sum_detail;
  static const ColumnSumKernels generic = {"generic", nullptr};
  static const PerIsa<ColumnSumKernels> tables(&generic, nullptr, column_sum_kernels_avx512(), nullptr);
  const ColumnSumKernels& k = tables.pick();
  return k.add_rows_f32 ? &k : nullptr;
}

}  // namespace ember::cpu
