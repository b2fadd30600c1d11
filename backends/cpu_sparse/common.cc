#include "ops.h"

#include <algorithm>

namespace minnow {
namespace cpu_sparse {

std::string shape_str(const mn_tensor& t) {
  if (t.rank < 0) return "[?]";
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i)
    s += (i ? "," : "") + (t.dims[i] < 0 ? std::string("?") : std::to_string(t.dims[i]));
  return s + "]";
}

std::string node_label(const Node& node) { return "node '" + node.name() + "' (" + node.op() + ")"; }

const char* kernel_name(Kind kind, BlockShape s) {
  // [kind][shape index in kBlockShapes]
  static const char* const names[3][4] = {
      {"f32_sparse_fc_csr", "f32_sparse_fc_1x4", "f32_sparse_fc_4x1", "f32_sparse_fc_1x8"},
      {"f32_sparse_conv1x1_csr", "f32_sparse_conv1x1_1x4", "f32_sparse_conv1x1_4x1",
       "f32_sparse_conv1x1_1x8"},
      {"f32_sparse_conv_csr", "f32_sparse_conv_1x4", "f32_sparse_conv_4x1",
       "f32_sparse_conv_1x8"}};
  for (int i = 0; i < 4; ++i)
    if (kBlockShapes[i] == s) return names[static_cast<int>(kind)][i];
  return "f32_sparse";
}

size_t block_row_grain(const SparseMatrix& w, double columns) {
  const double per_row = std::max(1.0, static_cast<double>(w.values.size()) /
                                           std::max<double>(1, w.block_rows()) * columns);
  return static_cast<size_t>(std::max(1.0, 65536.0 / per_row));
}

size_t rows_unit_grain(const SparseMatrix& w, double m) {
  if (w.panels() == 0) return block_row_grain(w, m);
  const double per_panel = std::max(1.0, static_cast<double>(w.panel_val.size()) /
                                             static_cast<double>(w.panels()) * m);
  return static_cast<size_t>(std::max(1.0, 65536.0 / per_panel));
}

}  // namespace cpu_sparse
}  // namespace minnow
