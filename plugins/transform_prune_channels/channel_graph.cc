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

int weight_of(const ir::ModelIR& m, const Consumer& c) { return m.graph.nodes[size_t(c.node)].inputs[1]; }
bool weight_is_rows(const ir::Node& n) {  // stored [outputs, columns]
  return n.op == "Conv" || (n.op == "Gemm" && attr_int(n, "transB", 0) != 0);
}

// A node that passes the group's channels from input to output unchanged in number.
bool member_op(const ir::ModelIR& m, const ir::Node& n, int64_t c, bool flattened) {
  if (n.outputs.size() != 1 || n.inputs.empty()) return false;
  if (elementwise(n.op)) {
    for (size_t k = 1; k < n.inputs.size(); ++k)  // Clip's bounds, Dropout's ratio: constant scalars only
      if (n.inputs[k] >= 0 &&
          !(is_constant(m, n.inputs[k]) && shape_elements(m.graph.tensors[size_t(n.inputs[k])].static_shape()) <= 1))
        return false;
    return true;
  }
  if (n.op == "Add") return n.inputs.size() == 2;
  if (flattened) return false;
  if (n.op == "Flatten") return attr_int(n, "axis", 1) == 1;
  return pool(n.op) || depthwise(m, n, c) || batchnorm(m, n, c);
}

// The inputs of a member that carry the group's channels.
std::vector<int> member_data_inputs(const ir::Node& n) {
  if (n.op == "Add") return {n.inputs[0], n.inputs[1]};
  return {n.inputs[0]};
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Grows the group from producer `start` over both directions of the graph; false when it
// reaches something that cannot drop a channel.
bool grow(const ir::ModelIR& m, const std::function<std::vector<int64_t>(int)>& act_shape, int start, Group* grp) {
  const ir::Graph& g = m.graph;
  const int64_t c = grp->channels;
  std::vector<int> queue;
  auto add_tensor = [&](int t, int64_t hw) {
    for (size_t i = 0; i < grp->tensors.size(); ++i)
      if (grp->tensors[i] == t) return grp->tensor_hw[i] == hw;
    grp->tensors.push_back(t);
    grp->tensor_hw.push_back(hw);
    queue.push_back(t);
    std::vector<int64_t> s = act_shape(t);  // channels (or channels * hw) on axis 1
    return s.size() >= 2 && s[1] == (hw ? c * hw : c);
  };
  auto no_broadcast = [&](const ir::Node& n) {  // an Add's inputs and output have one shape
    if (n.op != "Add") return true;
    std::vector<int64_t> s = act_shape(n.outputs[0]);
    return !s.empty() && act_shape(n.inputs[0]) == s && act_shape(n.inputs[1]) == s;
  };
  grp->producers.push_back(start);
  if (!add_tensor(g.nodes[size_t(start)].outputs[0], 0)) return false;
  while (!queue.empty()) {
    const int t = queue.back();
    queue.pop_back();
    const int64_t hw = grp->tensor_hw[size_t(std::find(grp->tensors.begin(), grp->tensors.end(), t) - grp->tensors.begin())];
    if (is_graph_output(g, t)) return false;
    // Backward: a producer layer, or a member whose data inputs join the group.
    const int pn = producer_of(g, t);
    if (pn < 0) return false;
    const ir::Node& p = g.nodes[size_t(pn)];
    if (!contains(grp->producers, pn) && !contains(grp->members, pn)) {
      if (hw == 0 && producer_channels(m, p) == c && p.outputs.size() == 1 &&
          act_shape(t).size() == (p.op == "Conv" ? 4u : 2u)) {
        grp->producers.push_back(pn);
      } else if ((p.op == "Flatten" ? hw != 0 && member_op(m, p, c, false) : member_op(m, p, c, hw != 0)) &&
                 no_broadcast(p)) {
        grp->members.push_back(pn);
        for (int i : member_data_inputs(p))
          if (!add_tensor(i, p.op == "Flatten" ? 0 : hw)) return false;
      } else {
        return false;
      }
    }
    // Forward: consumer layers, or members whose output joins the group.
    for (int cn : consumers_of(g, t)) {
      const ir::Node& n = g.nodes[size_t(cn)];
      if (contains(grp->members, cn)) continue;
      bool is_consumer = false;
      for (const auto& k : grp->consumers) is_consumer = is_consumer || k.node == cn;
      if (is_consumer) continue;
      const int64_t grp_cols = n.inputs[0] == t && std::count(n.inputs.begin(), n.inputs.end(), t) == 1
                                   ? consumer_group(m, n, c, hw ? hw : 1, hw != 0)
                                   : 0;
      if (grp_cols) {
        grp->consumers.push_back({cn, grp_cols});
        continue;
      }
      const std::vector<int> data = member_op(m, n, c, hw != 0) ? member_data_inputs(n) : std::vector<int>{};
      if (data.empty() || !contains(data, t)) return false;  // not a member, or t is not its data input
      grp->members.push_back(cn);
      int64_t out_hw = hw;
      if (n.op == "Flatten") {
        std::vector<int64_t> s = act_shape(t);
        out_hw = 1;
        for (size_t k = 2; k < s.size(); ++k) out_hw *= s[k];
      }
      if (!no_broadcast(n)) return false;
      if (!add_tensor(n.outputs[0], out_hw)) return false;
      for (int i : data)
        if (!add_tensor(i, hw)) return false;
    }
  }
  return !grp->consumers.empty();
}

}  // namespace

std::vector<Group> find_groups(const ir::ModelIR& m, const std::function<std::vector<int64_t>(int)>& act_shape) {
  std::vector<Group> groups;
  const auto& g = m.graph;
  std::vector<bool> seen(g.nodes.size(), false);
  for (size_t pn = 0; pn < g.nodes.size(); ++pn) {
    const ir::Node& prod = g.nodes[pn];
    if (seen[pn]) continue;
    Group grp;
    grp.channels = producer_channels(m, prod);
    if (grp.channels < 2 || prod.outputs.size() != 1) continue;
    // Channels are axis 1 of the activation: NCHW for Conv, [batch, features] for Gemm/MatMul.
    if (act_shape(prod.outputs[0]).size() != (prod.op == "Conv" ? 4u : 2u)) continue;
    const bool ok = grow(m, act_shape, int(pn), &grp);
    for (int p : grp.producers) seen[size_t(p)] = true;  // one try per connected set
    if (!ok) continue;
    auto by_order = [](std::vector<int>& v) { std::sort(v.begin(), v.end()); };
    by_order(grp.producers);
    by_order(grp.members);
    std::sort(grp.consumers.begin(), grp.consumers.end(),
              [](const Consumer& a, const Consumer& b) { return a.node < b.node; });
    for (int p : grp.producers) grp.weights.push_back(g.tensors[size_t(g.nodes[size_t(p)].inputs[1])].name);
    groups.push_back(std::move(grp));
  }
  return groups;
}

std::vector<float> consumer_matrix(const ir::ModelIR& m, const Consumer& c, int64_t channels, int64_t* outputs) {
  Tensor w = constant_f32(m, weight_of(m, c));
  const int64_t cols = channels * c.group;
  const int64_t o = w.elements() / cols;
  *outputs = o;
  std::vector<float> r(size_t(o * cols));
  const float* s = w.data<float>();
  if (weight_is_rows(m.graph.nodes[size_t(c.node)])) {
    std::copy(s, s + o * cols, r.begin());
  } else {  // [columns, outputs]
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t j = 0; j < o; ++j) r[size_t(j * cols + k)] = s[k * o + j];
  }
  return r;
}

void set_consumer_matrix(ir::ModelIR& m, const Consumer& c, const std::vector<float>& w, int64_t outputs,
                         int64_t channels) {
  const int t = weight_of(m, c);
  const ir::Node& n = m.graph.nodes[size_t(c.node)];
  const int64_t cols = channels * c.group;
  Tensor old = constant_f32(m, t);
  std::vector<int64_t> shape(old.shape().begin(), old.shape().end());
  const bool rows = weight_is_rows(n);
  if (n.op == "Conv") { shape[0] = outputs; shape[1] = channels; }
  else if (rows) { shape[0] = outputs; shape[1] = cols; }
  else { shape[0] = cols; shape[1] = outputs; }
  Tensor out(DataType::kFloat32, Shape(shape));
  float* d = out.data<float>();
  if (rows) {
    std::copy(w.begin(), w.end(), d);
  } else {
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t j = 0; j < outputs; ++j) d[k * outputs + j] = w[size_t(j * cols + k)];
  }
  set_dense(m, t, out);
}

bool consumer_can_have_bias(const ir::ModelIR& m, const Consumer& c, int64_t channels) {
  const ir::Node& n = m.graph.nodes[size_t(c.node)];
  if (n.op == "MatMul") return false;
  if (n.op == "Gemm" && attr_float(n, "beta", 1.f) != 1.f) return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    int64_t outputs = 0;
    consumer_matrix(m, c, channels, &outputs);
    return constant_f32(m, n.inputs[2]).elements() == outputs;  // not a broadcast scalar
  }
  return true;
}

std::vector<float> consumer_bias(const ir::ModelIR& m, const Consumer& c, int64_t outputs) {
  const ir::Node& n = m.graph.nodes[size_t(c.node)];
  std::vector<float> b(size_t(outputs), 0.f);
  if (n.op != "MatMul" && n.inputs.size() > 2 && n.inputs[2] >= 0) {
    Tensor t = constant_f32(m, n.inputs[2]);
    if (t.elements() == outputs) std::copy(t.data<float>(), t.data<float>() + outputs, b.begin());
  }
  return b;
}

void set_consumer_bias(ir::ModelIR& m, const Consumer& c, const std::vector<float>& b) {
  Tensor v = Tensor::from_vector<float>({int64_t(b.size())}, b);
  const ir::Node& n = m.graph.nodes[size_t(c.node)];
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
  ir::Node& n2 = m.graph.nodes[size_t(c.node)];
  if (n2.inputs.size() > 2) n2.inputs[2] = t;
  else n2.inputs.push_back(t);
}

void shrink_group(ir::ModelIR& m, const Group& g, const std::vector<int64_t>& keep) {
  const int64_t kept = int64_t(keep.size());
  for (int pn : g.producers) {  // first, so a consumer that is also a producer has its rows cut already
    ir::Node& prod = m.graph.nodes[size_t(pn)];
    select_constant(m, prod.inputs[1], weight_is_rows(prod) ? 0 : 1, keep);
    if (prod.op != "MatMul" && prod.inputs.size() > 2 && prod.inputs[2] >= 0) {
      Tensor b = constant_f32(m, prod.inputs[2]);
      if (b.elements() == g.channels) select_constant(m, prod.inputs[2], b.shape().size() - 1, keep);
    }
  }
  for (int mn : g.members) {
    ir::Node& n = m.graph.nodes[size_t(mn)];
    if (n.op == "BatchNormalization") {
      for (size_t i = 1; i < 5; ++i) select_constant(m, n.inputs[i], 0, keep);
    } else if (n.op == "Conv") {  // depthwise
      select_constant(m, n.inputs[1], 0, keep);
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) select_constant(m, n.inputs[2], 0, keep);
      set_attr_int(n, "group", kept);
    }
  }
  for (const Consumer& c : g.consumers) {
    int64_t outputs = 0;
    const std::vector<float> w = consumer_matrix(m, c, g.channels, &outputs);
    const int64_t cols = g.channels * c.group, kc = kept * c.group;
    std::vector<float> r(size_t(outputs * kc));
    for (int64_t o = 0; o < outputs; ++o)
      for (int64_t j = 0; j < kept; ++j)
        std::copy_n(&w[size_t(o * cols + keep[size_t(j)] * c.group)], c.group, &r[size_t(o * kc + j * c.group)]);
    set_consumer_matrix(m, c, r, outputs, kept);
  }
  // Declared shapes of the activations: channels (or flattened features) on axis 1.
  for (size_t k = 0; k < g.tensors.size(); ++k) {
    auto& info = m.graph.tensors[size_t(g.tensors[k])];
    if (!info.has_shape || info.shape.size() < 2) continue;
    const int64_t hw = g.tensor_hw[k] ? g.tensor_hw[k] : 1;
    if (info.shape[1].value == g.channels * hw) info.shape[1].value = kept * hw;
    else info.shape[1] = ir::Dim{};  // unknown: re-inferred when the model is prepared
  }
}

}  // namespace channels
}  // namespace compress
}  // namespace minnow
