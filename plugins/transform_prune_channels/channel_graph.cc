#include "channel_graph.h"

#include "../compress_common/ir_util.h"

#include <minnow/types.h>

#include <algorithm>
#include <stdexcept>

namespace minnow {
namespace compress {
namespace channels {
namespace {

int64_t attr_int(const ir::Node& n, const char* name, int64_t def) {
  const ir::Attribute* a = n.attr(name);
  return a ? a->i : def;
}
float attr_float(const ir::Node& n, const char* name, float def) {
  const ir::Attribute* a = n.attr(name);
  return a ? a->f : def;
}

// t is read by exactly one node input and is no graph output: editing it affects only that node.
bool sole_use(const ir::ModelIR& m, int t) {
  if (t < 0 || is_graph_output(m.graph, t)) return false;
  int uses = 0;
  for (const auto& n : m.graph.nodes)
    for (int i : n.inputs) uses += i == t;
  return uses == 1;
}

bool const_f32(const ir::ModelIR& m, int t) {
  return is_constant(m, t) && m.graph.tensors[size_t(t)].dtype == DataType::kFloat32;
}

int64_t rank_of(const ir::ModelIR& m, int t) { return int64_t(m.graph.tensors[size_t(t)].shape.size()); }
int64_t dim_of(const ir::ModelIR& m, int t, size_t k) { return m.graph.tensors[size_t(t)].shape[k].value; }

// Output channels of a producer layer (0 when it is not one).
int64_t producer_channels(const ir::ModelIR& m, const ir::Node& n) {
  if (n.inputs.size() < 2 || !const_f32(m, n.inputs[1]) || !sole_use(m, n.inputs[1])) return 0;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !(const_f32(m, n.inputs[2]) && sole_use(m, n.inputs[2]))) return 0;
  const int w = n.inputs[1];
  if (n.op == "Conv") {
    if (attr_int(n, "group", 1) != 1 || rank_of(m, w) != 4) return 0;
    return dim_of(m, w, 0);
  }
  if (n.op == "Gemm") {
    if (attr_int(n, "transA", 0) != 0 || rank_of(m, w) != 2) return 0;
    return dim_of(m, w, attr_int(n, "transB", 0) ? 0 : 1);
  }
  if (n.op == "MatMul" && n.inputs.size() == 2 && rank_of(m, w) == 2) return dim_of(m, w, 1);
  return 0;
}

bool elementwise(const std::string& op) {
  return op == "Relu" || op == "LeakyRelu" || op == "Clip" || op == "Sigmoid" || op == "Tanh" || op == "Identity" ||
         op == "Dropout";
}
bool pool(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool";
}

bool depthwise(const ir::ModelIR& m, const ir::Node& n, int64_t c) {
  if (n.op != "Conv" || n.inputs.size() < 2 || attr_int(n, "group", 1) != c || c <= 1) return false;
  const int w = n.inputs[1];
  if (!const_f32(m, w) || !sole_use(m, w) || rank_of(m, w) != 4 || dim_of(m, w, 0) != c || dim_of(m, w, 1) != 1) return false;
  return n.inputs.size() < 3 || n.inputs[2] < 0 || (const_f32(m, n.inputs[2]) && sole_use(m, n.inputs[2]));
}

bool batchnorm(const ir::ModelIR& m, const ir::Node& n, int64_t c) {
  if (n.op != "BatchNormalization" || n.inputs.size() != 5 || n.outputs.size() != 1) return false;
  for (size_t k = 1; k < 5; ++k) {
    int t = n.inputs[k];
    if (!const_f32(m, t) || !sole_use(m, t) || rank_of(m, t) != 1 || dim_of(m, t, 0) != c) return false;
  }
  return true;
}

// Columns per channel of a consumer layer reading `c` channels (hw each), or 0.
int64_t consumer_group(const ir::ModelIR& m, const ir::Node& n, int64_t c, int64_t hw, bool flattened) {
  if (n.inputs.size() < 2 || !const_f32(m, n.inputs[1]) || !sole_use(m, n.inputs[1])) return 0;
  const int w = n.inputs[1];
  if (n.op == "Conv" && !flattened) {
    if (attr_int(n, "group", 1) != 1 || rank_of(m, w) != 4 || dim_of(m, w, 1) != c) return 0;
    if (const ir::Attribute* a = n.attr("auto_pad"); a && a->s != "NOTSET") return 0;
    return dim_of(m, w, 2) * dim_of(m, w, 3);
  }
  if (n.op == "Gemm") {
    if (attr_int(n, "transA", 0) != 0 || attr_float(n, "alpha", 1.f) != 1.f || rank_of(m, w) != 2) return 0;
    return dim_of(m, w, attr_int(n, "transB", 0) ? 1 : 0) == c * hw ? hw : 0;
  }
  if (n.op == "MatMul" && n.inputs.size() == 2 && rank_of(m, w) == 2) return dim_of(m, w, 0) == c * hw ? hw : 0;
  return 0;
}

// `value` with only the indices `keep` along `axis`.
Tensor select_axis(const Tensor& value, size_t axis, const std::vector<int64_t>& keep) {
  std::vector<int64_t> shape(value.shape().begin(), value.shape().end());
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= shape[k];
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  const int64_t n = shape[axis];
  shape[axis] = int64_t(keep.size());
  Tensor out(DataType::kFloat32, Shape(shape));
  const float* src = value.data<float>();
  float* dst = out.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < keep.size(); ++j)
      std::copy(src + (o * n + keep[j]) * inner, src + (o * n + keep[j] + 1) * inner,
                dst + (o * int64_t(keep.size()) + int64_t(j)) * inner);
  return out;
}

void select_constant(ir::ModelIR& m, int t, size_t axis, const std::vector<int64_t>& keep) {
  set_dense(m, t, select_axis(constant_f32(m, t), axis, keep));
}

void set_attr_int(ir::Node& n, const char* name, int64_t v) {
  for (auto& a : n.attributes)
    if (a.name == name) { a.i = v; return; }
  n.attributes.push_back(ir::Attribute::Int(name, v));
}

int weight_of(const ir::ModelIR& m, const Pair& p) { return m.graph.nodes[size_t(p.consumer)].inputs[1]; }
bool weight_is_rows(const ir::ModelIR& m, const Pair& p) {  // stored [outputs, columns]
  const ir::Node& n = m.graph.nodes[size_t(p.consumer)];
  return n.op == "Conv" || (n.op == "Gemm" && attr_int(n, "transB", 0) != 0);
}

}  // namespace

std::vector<Pair> find_pairs(const ir::ModelIR& m, const std::function<std::vector<int64_t>(int)>& act_shape) {
  std::vector<Pair> pairs;
  const auto& g = m.graph;
  for (size_t pn = 0; pn < g.nodes.size(); ++pn) {
    const ir::Node& prod = g.nodes[pn];
    Pair p;
    p.producer = int(pn);
    p.channels = producer_channels(m, prod);
    if (p.channels < 2 || prod.outputs.size() != 1) continue;
    const std::vector<int64_t> out_shape = act_shape(prod.outputs[0]);
    // Channels are axis 1 of the activation: NCHW for Conv, [batch, features] for Gemm/MatMul.
    if (out_shape.size() != (prod.op == "Conv" ? 4u : 2u) || out_shape[1] != p.channels) continue;
    p.weight = g.tensors[size_t(prod.inputs[1])].name;
    int t = prod.outputs[0];
    bool ok = true;
    while (ok) {
      auto cons = consumers_of(g, t);
      if (cons.size() != 1 || is_graph_output(g, t)) { ok = false; break; }
      const ir::Node& n = g.nodes[size_t(cons[0])];
      if (n.inputs.empty() || n.inputs[0] != t || n.outputs.empty()) { ok = false; break; }
      const bool flattened = p.flatten >= 0;
      if (int64_t grp = consumer_group(m, n, p.channels, p.hw, flattened)) {
        p.consumer = cons[0];
        p.group = grp;
        break;
      }
      bool pass = false;
      if (elementwise(n.op)) {
        pass = true;
        for (size_t k = 1; k < n.inputs.size(); ++k)  // Clip's bounds, Dropout's ratio: constant scalars only
          pass = pass && (n.inputs[k] < 0 || (is_constant(m, n.inputs[k]) && shape_elements(m.graph.tensors[size_t(n.inputs[k])].static_shape()) <= 1));
        pass = pass && n.outputs.size() == 1;
      } else if (!flattened && (pool(n.op) || depthwise(m, n, p.channels) || batchnorm(m, n, p.channels))) {
        pass = n.outputs.size() == 1;
      } else if (!flattened && n.op == "Flatten" && attr_int(n, "axis", 1) == 1) {
        std::vector<int64_t> s = act_shape(t);
        if (s.size() >= 2 && s[1] == p.channels) {
          p.hw = 1;
          for (size_t k = 2; k < s.size(); ++k) p.hw *= s[k];
          p.flatten = int(p.chain.size());
          pass = true;
        }
      }
      if (!pass) { ok = false; break; }
      p.chain.push_back(cons[0]);
      t = n.outputs[0];
    }
    if (ok && p.consumer >= 0) pairs.push_back(p);
  }
  return pairs;
}

std::vector<float> consumer_matrix(const ir::ModelIR& m, const Pair& p, int64_t* outputs) {
  Tensor w = constant_f32(m, weight_of(m, p));
  const int64_t cols = p.channels * p.group;
  const int64_t o = w.elements() / cols;
  *outputs = o;
  std::vector<float> r(size_t(o * cols));
  const float* s = w.data<float>();
  if (weight_is_rows(m, p)) {
    std::copy(s, s + o * cols, r.begin());
  } else {  // [columns, outputs]
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t j = 0; j < o; ++j) r[size_t(j * cols + k)] = s[k * o + j];
  }
  return r;
}

void set_consumer_matrix(ir::ModelIR& m, const Pair& p, const std::vector<float>& w, int64_t outputs, int64_t channels) {
  const int t = weight_of(m, p);
  const int64_t cols = channels * p.group;
  Tensor old = constant_f32(m, t);
  std::vector<int64_t> shape(old.shape().begin(), old.shape().end());
  if (m.graph.nodes[size_t(p.consumer)].op == "Conv") shape[1] = channels;
  else if (weight_is_rows(m, p)) shape[1] = cols;
  else shape[0] = cols;
  Tensor out(DataType::kFloat32, Shape(shape));
  float* d = out.data<float>();
  if (weight_is_rows(m, p)) {
    std::copy(w.begin(), w.end(), d);
  } else {
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t j = 0; j < outputs; ++j) d[k * outputs + j] = w[size_t(j * cols + k)];
  }
  set_dense(m, t, out);
}

bool consumer_can_have_bias(const ir::ModelIR& m, const Pair& p) {
  const ir::Node& n = m.graph.nodes[size_t(p.consumer)];
  if (n.op == "MatMul") return false;
  if (n.op == "Gemm" && attr_float(n, "beta", 1.f) != 1.f) return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    int64_t outputs = 0;
    consumer_matrix(m, p, &outputs);
    return constant_f32(m, n.inputs[2]).elements() == outputs;  // not a broadcast scalar
  }
  return true;
}

std::vector<float> consumer_bias(const ir::ModelIR& m, const Pair& p, int64_t outputs) {
  const ir::Node& n = m.graph.nodes[size_t(p.consumer)];
  std::vector<float> b(size_t(outputs), 0.f);
  if (n.op != "MatMul" && n.inputs.size() > 2 && n.inputs[2] >= 0) {
    Tensor t = constant_f32(m, n.inputs[2]);
    if (t.elements() == outputs) std::copy(t.data<float>(), t.data<float>() + outputs, b.begin());
  }
  return b;
}

void set_consumer_bias(ir::ModelIR& m, const Pair& p, const std::vector<float>& b) {
  Tensor v = Tensor::from_vector<float>({int64_t(b.size())}, b);
  ir::Node& n = m.graph.nodes[size_t(p.consumer)];
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    Tensor old = constant_f32(m, n.inputs[2]);
    std::vector<int64_t> shape(old.shape().begin(), old.shape().end());  // [O] or [1, O]
    Tensor out(DataType::kFloat32, Shape(shape));
    std::copy(b.begin(), b.end(), out.data<float>());
    set_dense(m, n.inputs[2], out);
    return;
  }
  const std::string base = m.graph.tensors[size_t(n.inputs[1])].name + "_bias";
  int t = add_constant(m, base, v);
  ir::Node& n2 = m.graph.nodes[size_t(p.consumer)];  // add_constant does not touch nodes; re-fetch anyway
  if (n2.inputs.size() > 2) n2.inputs[2] = t;
  else n2.inputs.push_back(t);
}

void shrink_producer_and_chain(ir::ModelIR& m, const Pair& p, const std::vector<int64_t>& keep) {
  const int64_t kept = int64_t(keep.size());
  ir::Node& prod = m.graph.nodes[size_t(p.producer)];
  const bool rows = prod.op == "Conv" || (prod.op == "Gemm" && attr_int(prod, "transB", 0) != 0);
  select_constant(m, prod.inputs[1], rows ? 0 : 1, keep);
  if (prod.op != "MatMul" && prod.inputs.size() > 2 && prod.inputs[2] >= 0) {
    Tensor b = constant_f32(m, prod.inputs[2]);
    if (b.elements() == p.channels) select_constant(m, prod.inputs[2], b.shape().size() - 1, keep);
  }
  std::vector<int> outs{prod.outputs[0]};
  for (int c : p.chain) outs.push_back(m.graph.nodes[size_t(c)].outputs[0]);
  for (size_t k = 0; k < p.chain.size(); ++k) {
    ir::Node& n = m.graph.nodes[size_t(p.chain[k])];
    if (n.op == "BatchNormalization") {
      for (size_t i = 1; i < 5; ++i) select_constant(m, n.inputs[i], 0, keep);
    } else if (n.op == "Conv") {  // depthwise
      select_constant(m, n.inputs[1], 0, keep);
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) select_constant(m, n.inputs[2], 0, keep);
      set_attr_int(n, "group", kept);
    }
  }
  // Declared shapes of the activations: channels (or flattened features) on axis 1.
  for (size_t k = 0; k < outs.size(); ++k) {
    auto& info = m.graph.tensors[size_t(outs[k])];
    if (!info.has_shape || info.shape.size() < 2) continue;
    const bool flat = p.flatten >= 0 && int(k) > p.flatten;
    const int64_t before = flat ? p.channels * p.hw : p.channels, after = flat ? kept * p.hw : kept;
    if (info.shape[1].value == before) info.shape[1].value = after;
    else info.shape[1] = ir::Dim{};  // unknown: re-inferred when the model is prepared
  }
}

}  // namespace channels
}  // namespace compress
}  // namespace minnow
