// fuse: lossless graph rewrites before compression.
//  - Constant nodes become constant tensors (their value is then visible to later steps);
//  - Identity and Dropout (inference: the identity) are removed;
//  - BatchNormalization after Conv / Gemm is folded into the weights and bias (a bias is
//    created when there was none);
//  - a zero-valued constant Pad over spatial dims only is folded into the next Conv's pads.
// Activation fusion (Conv/Gemm + Relu/Clip/LeakyRelu) is only reported here: no standard op
// carries a fused activation, so the file keeps the two nodes, and the engine fuses Relu
// and constant-bound Clip into the kernel before them when it prepares the model
// (mn_kernel.fuse_clamp, docs/ARCHITECTURE.md).
#include "../compress_common/ir_util.h"
#include "../compress_common/transform_plugin.h"

#include <minnow/model.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace minnow {
namespace compress {
namespace {

struct Fuser {
  TransformContext& ctx;
  ir::ModelIR& m;
  std::vector<bool> dead;
  std::map<std::string, int> counts;

  explicit Fuser(TransformContext& c) : ctx(c), m(c.model), dead(c.model.graph.nodes.size(), false) {}

  ir::Graph& g() { return m.graph; }

  int live_consumers(int t) {
    int n = 0;
    for (int c : consumers_of(g(), t)) if (!dead[size_t(c)]) ++n;
    return n;
  }
  void replace_uses(int from, int to) {
    for (size_t n = 0; n < g().nodes.size(); ++n)
      if (!dead[n]) for (int& i : g().nodes[n].inputs) if (i == from) i = to;
  }
  bool is_graph_io(int t) {
    for (int i : g().inputs) if (i == t) return true;
    return is_graph_output(g(), t);
  }

  // Makes node `n` disappear, its output becoming its first input. When the output is a
  // graph output (its name must stay), the input's producer writes the output instead.
  bool bypass(int n) {
    ir::Node& node = g().nodes[size_t(n)];
    int in = node.inputs[0], out = node.outputs[0];
    if (!is_graph_output(g(), out)) {
      replace_uses(out, in);
      dead[size_t(n)] = true;
      return true;
    }
    int p = producer_of(g(), in);
    if (p < 0 || dead[size_t(p)] || is_graph_io(in) || live_consumers(in) != 1) return false;
    for (int& o : g().nodes[size_t(p)].outputs) if (o == in) o = out;
    dead[size_t(n)] = true;
    return true;
  }

  void constants() {
    for (size_t n = 0; n < g().nodes.size(); ++n) {
      ir::Node& node = g().nodes[n];
      if (dead[n] || !node.domain.empty() || node.op != "Constant" || node.outputs.size() != 1) continue;
      int out = node.outputs[0];
      if (is_graph_output(g(), out)) continue;
      Tensor value;
      if (const ir::Attribute* a = node.attr("value"); a && a->type == ir::AttrType::kTensor) {
        ir::TensorInfo& dst = g().tensors[size_t(out)];
        const ir::TensorInfo& src = g().tensors[size_t(a->tensor)];
        std::string name = dst.name;
        dst = src;
        dst.name = name;
      } else if (const ir::Attribute* f = node.attr("value_float")) {
        set_dense(m, out, Tensor::from_vector<float>({}, {f->f}));
      } else if (const ir::Attribute* fs = node.attr("value_floats")) {
        set_dense(m, out, Tensor::from_vector<float>({int64_t(fs->floats.size())}, fs->floats));
      } else if (const ir::Attribute* i = node.attr("value_int")) {
        set_dense(m, out, Tensor::from_vector<int64_t>({}, {i->i}));
      } else if (const ir::Attribute* is = node.attr("value_ints")) {
        set_dense(m, out, Tensor::from_vector<int64_t>({int64_t(is->ints.size())}, is->ints));
      } else {
        continue;
      }
      dead[n] = true;
      counts["constant nodes -> tensors"]++;
    }
  }

  void identities() {
    for (size_t n = 0; n < g().nodes.size(); ++n) {
      ir::Node& node = g().nodes[n];
      if (dead[n] || !node.domain.empty() || node.inputs.empty() || node.outputs.empty()) continue;
      if (node.op == "Identity" && bypass(int(n))) counts["Identity removed"]++;
      if (node.op == "Dropout") {
        // A mask output in use or training_mode set: not a plain identity.
        if (node.outputs.size() > 1 && live_consumers(node.outputs[1]) > 0) continue;
        if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
          if (!is_constant(m, node.inputs[2])) continue;
          auto r = decode_constant(m, g().tensors[size_t(node.inputs[2])]);
          if (!r || r.value().elements() != 1 || r.value().data<uint8_t>()[0]) continue;
        }
        node.outputs.resize(1);
        if (bypass(int(n))) counts["Dropout removed"]++;
      }
    }
  }

  float attr_f(const ir::Node& n, const char* name, float def) {
    const ir::Attribute* a = n.attr(name);
    return a ? a->f : def;
  }
  int64_t attr_i(const ir::Node& n, const char* name, int64_t def) {
    const ir::Attribute* a = n.attr(name);
    return a ? a->i : def;
  }

  void batchnorms() {
    for (size_t n = 0; n < g().nodes.size(); ++n) {
      ir::Node& bn = g().nodes[n];
      if (dead[n] || !bn.domain.empty() || bn.op != "BatchNormalization" || bn.inputs.size() < 5) continue;
      if (bn.outputs.size() > 1 && live_consumers(bn.outputs[1]) + (bn.outputs.size() > 2 ? live_consumers(bn.outputs[2]) : 0) > 0) continue;
      if (attr_i(bn, "training_mode", 0)) continue;
      bool consts = true;
      for (int k = 1; k < 5; ++k) consts = consts && is_constant(m, bn.inputs[size_t(k)]);
      if (!consts) continue;
      int x = bn.inputs[0];
      int p = producer_of(g(), x);
      if (p < 0 || dead[size_t(p)] || is_graph_io(x) || live_consumers(x) != 1) continue;
      ir::Node& prod = g().nodes[size_t(p)];
      if (!prod.domain.empty() || (prod.op != "Conv" && prod.op != "Gemm") || prod.inputs.size() < 2) continue;
      if (!is_constant(m, prod.inputs[1])) continue;
      if (prod.inputs.size() > 2 && prod.inputs[2] >= 0 && !is_constant(m, prod.inputs[2])) continue;
      Tensor scale = constant_f32(m, bn.inputs[1]), shift = constant_f32(m, bn.inputs[2]);
      Tensor mean = constant_f32(m, bn.inputs[3]), var = constant_f32(m, bn.inputs[4]);
      const float eps = attr_f(bn, "epsilon", 1e-5f);
      Tensor w = constant_f32(m, prod.inputs[1]);
      const int64_t c = scale.elements();
      if (shift.elements() != c || mean.elements() != c || var.elements() != c) continue;
      int64_t out_ch = 0, inner = 0;
      bool trans_b = true;
      if (prod.op == "Conv") {
        out_ch = w.shape()[0];
        inner = w.elements() / out_ch;
      } else {
        if (attr_f(prod, "alpha", 1.f) != 1.f || attr_f(prod, "beta", 1.f) != 1.f || attr_i(prod, "transA", 0)) continue;
        if (w.shape().size() != 2) continue;
        trans_b = attr_i(prod, "transB", 0) != 0;
        out_ch = trans_b ? w.shape()[0] : w.shape()[1];
        inner = trans_b ? w.shape()[1] : w.shape()[0];
      }
      if (out_ch != c) continue;
      Tensor bias(DataType::kFloat32, {c});
      if (prod.inputs.size() > 2 && prod.inputs[2] >= 0) {
        Tensor b = constant_f32(m, prod.inputs[2]);
        if (b.elements() == c) for (int64_t k = 0; k < c; ++k) bias.data<float>()[k] = b.data<float>()[k];
        else if (b.elements() == 1) for (int64_t k = 0; k < c; ++k) bias.data<float>()[k] = b.data<float>()[0];
        else continue;
      }
      float* wp = w.data<float>();
      for (int64_t o = 0; o < c; ++o) {
        // Computed in double so the folded model matches the original to float rounding.
        double s = double(scale.data<float>()[o]) / std::sqrt(double(var.data<float>()[o]) + eps);
        for (int64_t i = 0; i < inner; ++i) {
          float& v = (prod.op == "Conv" || trans_b) ? wp[o * inner + i] : wp[i * c + o];
          v = float(v * s);
        }
        float& b = bias.data<float>()[o];
        b = float((double(b) - mean.data<float>()[o]) * s + shift.data<float>()[o]);
      }
      // The folded bias is named after the weight ("b1.dw.0.weight" -> "b1.dw.0.bias_bn"),
      // not after the BatchNormalization's output, which exporters name by graph path.
      const std::string wname = g().tensors[size_t(prod.inputs[1])].name;
      const std::string suffix = ".weight";
      std::string bname = wname.size() > suffix.size() && wname.compare(wname.size() - suffix.size(), suffix.size(), suffix) == 0
                              ? wname.substr(0, wname.size() - suffix.size()) + ".bias_bn"
                              : wname + "_bias_bn";
      if (g().find_tensor(bname) >= 0) bname = g().tensors[size_t(bn.outputs[0])].name + "_bias";
      int wt = add_constant(m, wname + "_bn", w);
      int bt = add_constant(m, bname, bias);
      ir::Node& pr = g().nodes[size_t(p)];  // add_constant may not move nodes, but be explicit
      pr.inputs[1] = wt;
      if (pr.inputs.size() < 3) pr.inputs.resize(3, -1);
      pr.inputs[2] = bt;
      pr.outputs[0] = g().nodes[n].outputs[0];
      dead[n] = true;
      counts["BatchNormalization folded into " + pr.op]++;
    }
  }

  void pads() {
    for (size_t n = 0; n < g().nodes.size(); ++n) {
      ir::Node& pad = g().nodes[n];
      if (dead[n] || !pad.domain.empty() || pad.op != "Pad" || pad.inputs.empty()) continue;
      const ir::Attribute* mode = pad.attr("mode");
      if (mode && mode->s != "constant") continue;
      std::vector<int64_t> pv;
      if (const ir::Attribute* a = pad.attr("pads")) {
        pv = a->ints;
        if (pad.attr("value") && pad.attr("value")->f != 0.f) continue;
      } else {
        if (pad.inputs.size() < 2 || !is_constant(m, pad.inputs[1])) continue;
        auto r = decode_constant(m, g().tensors[size_t(pad.inputs[1])]);
        if (!r || r.value().dtype() != DataType::kInt64) continue;
        pv.assign(r.value().data<int64_t>(), r.value().data<int64_t>() + r.value().elements());
        if (pad.inputs.size() > 2 && pad.inputs[2] >= 0) {
          if (!is_constant(m, pad.inputs[2])) continue;
          auto v = decode_constant(m, g().tensors[size_t(pad.inputs[2])]);
          if (!v || v.value().dtype() != DataType::kFloat32 || v.value().data<float>()[0] != 0.f) continue;
        }
        if (pad.inputs.size() > 3 && pad.inputs[3] >= 0) continue;  // axes: keep it simple
      }
      int y = pad.outputs[0];
      if (is_graph_io(y) || live_consumers(y) != 1) continue;
      int cidx = -1;
      for (int c : consumers_of(g(), y)) if (!dead[size_t(c)]) cidx = c;
      ir::Node& conv = g().nodes[size_t(cidx)];
      if (conv.op != "Conv" || !conv.domain.empty() || conv.inputs[0] != y) continue;
      if (const ir::Attribute* ap = conv.attr("auto_pad"); ap && ap->s != "NOTSET") continue;
      const size_t r = pv.size() / 2;
      if (r < 3 || pv.size() != 2 * r) continue;
      if (pv[0] || pv[1] || pv[r] || pv[r + 1]) continue;  // N and C must not be padded
      bool neg = false;
      for (int64_t v : pv) neg = neg || v < 0;
      if (neg) continue;
      const size_t sp = r - 2;
      std::vector<int64_t> cp(2 * sp, 0);
      if (const ir::Attribute* a = conv.attr("pads")) {
        if (a->ints.size() != 2 * sp) continue;
        cp = a->ints;
      }
      for (size_t k = 0; k < sp; ++k) {
        cp[k] += pv[2 + k];
        cp[sp + k] += pv[r + 2 + k];
      }
      bool found = false;
      for (auto& a : conv.attributes) if (a.name == "pads") { a.ints = cp; found = true; }
      if (!found) conv.attributes.push_back(ir::Attribute::Ints("pads", cp));
      conv.inputs[0] = pad.inputs[0];
      dead[n] = true;
      counts["Pad folded into Conv"]++;
    }
  }

  void report_activations() {
    for (size_t n = 0; n < g().nodes.size(); ++n) {
      const ir::Node& node = g().nodes[n];
      if (dead[n] || (node.op != "Conv" && node.op != "Gemm")) continue;
      int y = node.outputs[0];
      if (live_consumers(y) != 1 || is_graph_output(g(), y)) continue;
      for (int c : consumers_of(g(), y)) {
        const std::string& op = g().nodes[size_t(c)].op;
        if (!dead[size_t(c)] && (op == "Relu" || op == "Clip" || op == "LeakyRelu"))
          counts["activation fusion candidates (" + node.op + "+" + op + ", not applied)"]++;
      }
    }
  }
};

// Attributes of ONNX-domain nodes whose value is the ONNX default: every kernel and the
// training graph read them with that default, so leaving them out is lossless, and each
// is ~50 bytes of name, table and vector (lenet5: 18 of its 28 attributes, 0.9 KB).
// kernel_shape stays (optional for Conv only, and read by pooling).
bool is_onnx_default(const std::string& op, const ir::Attribute& a) {
  auto all = [&](int64_t v) {
    if (a.type != ir::AttrType::kInts) return false;
    for (int64_t x : a.ints)
      if (x != v) return false;
    return true;
  };
  auto is_int = [&](int64_t v) { return a.type == ir::AttrType::kInt && a.i == v; };
  auto is_float = [&](float v) { return a.type == ir::AttrType::kFloat && a.f == v; };
  auto is_str = [&](const char* v) { return a.type == ir::AttrType::kString && a.s == v; };
  const std::string& n = a.name;
  if (op == "Conv" || op == "ConvTranspose")
    return (n == "strides" && all(1)) || (n == "dilations" && all(1)) || (n == "pads" && all(0)) ||
           (n == "group" && is_int(1)) || (n == "auto_pad" && is_str("NOTSET")) ||
           (n == "output_padding" && all(0));
  if (op == "MaxPool" || op == "AveragePool")
    return (n == "strides" && all(1)) || (n == "dilations" && all(1)) || (n == "pads" && all(0)) ||
           (n == "ceil_mode" && is_int(0)) || (n == "auto_pad" && is_str("NOTSET")) ||
           (n == "storage_order" && is_int(0)) || (n == "count_include_pad" && is_int(0));
  if (op == "Gemm")
    return (n == "alpha" && is_float(1.f)) || (n == "beta" && is_float(1.f)) ||
           (n == "transA" && is_int(0)) || (n == "transB" && is_int(0));
  if (op == "Flatten") return n == "axis" && is_int(1);
  if (op == "LeakyRelu") return n == "alpha" && is_float(0.01f);
  if (op == "BatchNormalization") return n == "epsilon" && is_float(1e-5f);
  if (op == "Gather") return n == "axis" && is_int(0);
  return false;
}

int drop_default_attributes(ir::ModelIR& m) {
  int dropped = 0;
  for (auto& node : m.graph.nodes) {
    if (!node.domain.empty() && node.domain != "ai.onnx") continue;
    auto& at = node.attributes;
    const size_t before = at.size();
    at.erase(std::remove_if(at.begin(), at.end(), [&](const ir::Attribute& a) { return is_onnx_default(node.op, a); }),
             at.end());
    dropped += static_cast<int>(before - at.size());
  }
  return dropped;
}

void fuse(TransformContext& ctx) {
  const size_t nodes_before = ctx.model.graph.nodes.size();
  const bool bn = ctx.options.get_bool("batchnorm", true);
  const bool pad = ctx.options.get_bool("pad", true);
  const bool ident = ctx.options.get_bool("identity", true);
  Fuser f(ctx);
  f.constants();
  if (ident) f.identities();
  if (bn) f.batchnorms();
  if (pad) f.pads();
  f.report_activations();
  remove_nodes(ctx.model, f.dead);
  // names=short: intermediate activations renamed a0, a1, ..., nodes n0, n1, ... A
  // few kilobytes of strings matter once the weights are compressed 30x; the graph's
  // inputs, outputs and constants (weights, named in options and reports) keep theirs;
  // nodes are named n0, n1, ... so errors still point at one.
  const std::string names = ctx.options.get_string("names", "keep");
  if (names != "keep" && names != "short") throw std::runtime_error("fuse: names must be keep or short");
  if (names == "short") {
    auto& g = ctx.model.graph;
    std::set<std::string> taken;
    std::vector<bool> keep(g.tensors.size(), false);
    for (int i : g.inputs) keep[size_t(i)] = true;
    for (int o : g.outputs) keep[size_t(o)] = true;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      keep[t] = keep[t] || g.tensors[t].is_constant();
      if (keep[t]) taken.insert(g.tensors[t].name);
    }
    int next = 0, renamed = 0;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      if (keep[t]) continue;
      std::string n;
      do n = "a" + std::to_string(next++);
      while (taken.count(n));
      g.tensors[t].name = n;
      ++renamed;
    }
    for (size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].name = "n" + std::to_string(n);
    f.counts["activations renamed"] = renamed;
  }
  // defaults=drop (the default): attributes at their ONNX defaults left out.
  const std::string defaults = ctx.options.get_string("defaults", "drop");
  if (defaults != "drop" && defaults != "keep") throw std::runtime_error("fuse: defaults must be drop or keep");
  if (defaults == "drop") {
    const int d = drop_default_attributes(ctx.model);
    if (d) f.counts["attributes at ONNX defaults dropped"] = d;
  }
  ctx.report << "fuse: " << nodes_before << " -> " << ctx.model.graph.nodes.size() << " nodes\n";
  // The log records the step's parameters and what it changed; candidates it only
  // reports (activation fusion, done by the engine at prepare time) stay in the report.
  std::string params = "{\"names\":\"" + json_escape(names) + "\",\"defaults\":\"" + json_escape(defaults) + "\"";
  for (const auto& kv : f.counts) {
    ctx.report << "  " << kv.first << ": " << kv.second << "\n";
    if (kv.first.find("not applied") != std::string::npos) continue;
    params += ",\"" + json_escape(kv.first) + "\":" + std::to_string(kv.second);
  }
  ctx.parameters = params + "}";
}

}  // namespace
}  // namespace compress
}  // namespace minnow

MINNOW_DEFINE_TRANSFORM("fuse", "0.1.0",
                        "folds BatchNormalization, Pad and Constant nodes, removes Identity/Dropout (lossless)",
                        minnow::compress::fuse)
