// Picks the float32 column-schedule row loops of the active instruction set
// (column_rows.h).
#include "kernels/cpu/column_rows.h"

#include "kernels/cpu/isa.h"

namespace ember::cpu {

const column_rows_detail::ColumnRowKernels* column_row_kernels() {
  using namespace column_rows_detail;
  static const ColumnRowKernels generic = {"generic", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  static const PerIsa<ColumnRowKernels> tables(&generic, nullptr, column_row_kernels_avx512(), nullptr);
  const ColumnRowKernels& k = tables.pick();
  return k.add_rows_f32 ? &k : nullptr;
}

}  // namespace ember::cpu
