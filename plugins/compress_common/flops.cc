#include "flops.h"

namespace minnow {
namespace compress {

int64_t node_flops(const ir::ModelIR& m, const ir::Node& n, const ShapeOf& shape) {
  if (n.op != "Conv" && n.op != "Gemm" && n.op != "MatMul") return 0;
  if (n.inputs.size() < 2 || n.outputs.empty()) return 0;
  std::vector<int64_t> y = shape(n.outputs[0]), w = shape(n.inputs[1]), x = shape(n.inputs[0]);
  if (y.empty() || w.empty() || x.empty()) return 0;
  for (const auto* s : {&y, &w, &x})
    for (size_t k = 1; k < s->size(); ++k)
      if ((*s)[k] < 0) return 0;
  int64_t out = 1;  // output elements per sample
  for (size_t k = 1; k < y.size(); ++k) out *= y[k];
  if (n.op == "Conv") {
    int64_t fan_in = 1;  // Cin / group * kh * kw
    for (size_t k = 1; k < w.size(); ++k) fan_in *= w[k];
    return 2 * out * fan_in;
  }
  (void)m;
  return 2 * out * x.back();  // Gemm (transA = 0) / MatMul: K = the input's last dim
}

int64_t model_flops(const ir::ModelIR& m, const ShapeOf& shape) {
  int64_t f = 0;
  for (const auto& n : m.graph.nodes) f += node_flops(m, n, shape);
  return f;
}

}  // namespace compress
}  // namespace minnow
