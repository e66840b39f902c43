// The table of ONNX ops Ember runs, built once from the family files' rows.
#include <algorithm>

#include "onnx/op_families.h"

namespace ember::onnx {

namespace {
const std::vector<OpRow>& table() {
  static const std::vector<OpRow> rows = [] {
    std::vector<OpRow> r;
    add_elementwise_ops(r);
    add_shape_ops(r);
    add_nn_ops(r);
    add_reduce_ops(r);
    add_index_ops(r);
    add_resize_ops(r);
    add_host_loop_ops(r);
    add_loss_ops(r);
    add_scatter_ops(r);
    add_einsum_ops(r);
    add_recurrent_ops(r);
    add_quantized_ops(r);
    add_host_math_ops(r);
    add_normalization_ops(r);
    add_select_ops(r);
    add_grid_sample_ops(r);
    std::sort(r.begin(), r.end(), [](const OpRow& a, const OpRow& b) { return std::string(a.op_type) < b.op_type; });
    return r;
  }();
  return rows;
}
}  // namespace

const OpRow* find_op(const std::string& op_type) {
  const auto& rows = table();
  auto it = std::lower_bound(rows.begin(), rows.end(), op_type,
                             [](const OpRow& row, const std::string& key) { return row.op_type < key; });
  return it != rows.end() && it->op_type == op_type ? &*it : nullptr;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& row : table()) names.emplace_back(row.op_type);
  return names;
}

}  // namespace ember::onnx
