#include "flops.h"

#include <utility>

namespace minnow {
namespace compress {

namespace {

// LSTM gate GEMMs per sample: {X part, R part} = 2 * T * 4H * {I, H}.
std::pair<int64_t, int64_t> lstm_flops(const ir::Node& n, const ShapeOf& shape) {
  if (n.inputs.size() < 3) return {0, 0};
  std::vector<int64_t> x = shape(n.inputs[0]), w = shape(n.inputs[1]), r = shape(n.inputs[2]);
  if (x.size() != 3 || w.size() != 3 || r.size() != 3 || x[0] < 0 || w[1] < 0 || w[2] < 0 || r[2] < 0) return {0, 0};
  const int64_t dirs = w[0] > 0 ? w[0] : 1;
  return {2 * x[0] * dirs * w[1] * w[2], 2 * x[0] * dirs * r[1] * r[2]};
}

}  // namespace

int64_t weight_flops(const ir::ModelIR& m, const ir::Node& n, int t, const ShapeOf& shape) {
  if (n.op == "LSTM") {
    const auto f = lstm_flops(n, shape);
    return n.inputs.size() > 2 && t == n.inputs[2] ? f.second : t == n.inputs[1] ? f.first : 0;
  }
  return node_flops(m, n, shape);
}

int64_t node_flops(const ir::ModelIR& m, const ir::Node& n, const ShapeOf& shape) {
  if (n.op == "LSTM") {
    const auto f = lstm_flops(n, shape);
    return f.first + f.second;
  }
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
