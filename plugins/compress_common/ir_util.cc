#include "ir_util.h"

#include <minnow/model.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace minnow {
namespace compress {

bool is_constant(const ir::ModelIR& m, int t) {
  return t >= 0 && t < int(m.graph.tensors.size()) && m.graph.tensors[t].is_constant();
}

Tensor constant_f32(const ir::ModelIR& m, int t) {
  if (!is_constant(m, t)) throw std::runtime_error("tensor " + std::to_string(t) + " is not a constant");
  const auto& info = m.graph.tensors[t];
  if (info.dtype != DataType::kFloat32)
    throw std::runtime_error("tensor '" + info.name + "': expected float32, got " + dtype_name(info.dtype));
  auto r = decode_constant(m, info);
  if (!r) throw std::runtime_error(r.status().message());
  // decode may return a view into the model's buffers; callers edit the copy.
  return r.value().clone();
}

uint32_t add_buffer(ir::ModelIR& m, const void* data, size_t size) {
  m.buffers.push_back(ir::Blob::copy_of(data, size));
  return static_cast<uint32_t>(m.buffers.size() - 1);
}

void set_dense(ir::ModelIR& m, int t, const Tensor& value) {
  auto& info = m.graph.tensors[t];
  info.dtype = value.dtype();
  info.shape.clear();
  for (int64_t d : value.shape()) info.shape.push_back(ir::Dim{d, ""});
  info.has_shape = true;
  info.quant = ir::QuantParams{};
  info.encodings = {ir::DenseStage{add_buffer(m, value.raw(), value.bytes()), value.dtype()}};
}

int add_constant(ir::ModelIR& m, const std::string& base, const Tensor& value) {
  std::string name = base;
  for (int k = 1; m.graph.find_tensor(name) >= 0; ++k) name = base + "_" + std::to_string(k);
  ir::TensorInfo info;
  info.name = name;
  m.graph.tensors.push_back(info);
  int t = int(m.graph.tensors.size()) - 1;
  set_dense(m, t, value);
  return t;
}

int producer_of(const ir::Graph& g, int t) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int o : g.nodes[n].outputs)
      if (o == t) return int(n);
  return -1;
}

std::vector<int> consumers_of(const ir::Graph& g, int t) {
  std::vector<int> r;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int i : g.nodes[n].inputs)
      if (i == t) r.push_back(int(n));
  return r;
}

bool is_graph_output(const ir::Graph& g, int t) {
  for (int o : g.outputs)
    if (o == t) return true;
  return false;
}

uint64_t stored_bytes(const ir::ModelIR& m, int t) {
  uint64_t n = 0;
  for (const auto& st : m.graph.tensors[t].encodings) {
    if (auto* d = std::get_if<ir::DenseStage>(&st)) n += m.buffers[d->buffer].size;
    if (auto* s = std::get_if<ir::SparseStage>(&st)) {
      if (s->index == ir::SparseIndex::kRelative) n += m.buffers[s->index_buffer].size + s->index_code_lengths.size();
      else n += m.buffers[s->row_ptr].size + m.buffers[s->col_idx].size;
    }
    if (auto* c = std::get_if<ir::CodebookStage>(&st)) {
      n += c->centroids.size() * 4;
      if (&st == &m.graph.tensors[t].encodings.back()) n += m.buffers[c->indices].size;
    }
    if (auto* h = std::get_if<ir::HuffmanStage>(&st)) n += h->code_lengths.size() + m.buffers[h->bitstream].size;
  }
  return n;
}

void remove_nodes(ir::ModelIR& m, const std::vector<bool>& dead) {
  std::vector<ir::Node> keep;
  for (size_t n = 0; n < m.graph.nodes.size(); ++n)
    if (n >= dead.size() || !dead[n]) keep.push_back(std::move(m.graph.nodes[n]));
  m.graph.nodes = std::move(keep);
  compact(m);
}

void compact(ir::ModelIR& m) {
  auto& g = m.graph;
  std::vector<bool> used(g.tensors.size(), false);
  for (const auto& n : g.nodes) {
    for (int i : n.inputs) if (i >= 0) used[i] = true;
    for (int o : n.outputs) used[o] = true;
    for (const auto& a : n.attributes) if (a.type == ir::AttrType::kTensor && a.tensor >= 0) used[a.tensor] = true;
  }
  for (int i : g.inputs) used[i] = true;
  for (int o : g.outputs) used[o] = true;
  std::vector<int> remap(g.tensors.size(), -1);
  std::vector<ir::TensorInfo> tensors;
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (used[t]) {
      remap[t] = int(tensors.size());
      tensors.push_back(std::move(g.tensors[t]));
    }
  g.tensors = std::move(tensors);
  for (auto& n : g.nodes) {
    for (int& i : n.inputs) if (i >= 0) i = remap[i];
    for (int& o : n.outputs) o = remap[o];
    for (auto& a : n.attributes) if (a.type == ir::AttrType::kTensor && a.tensor >= 0) a.tensor = remap[a.tensor];
  }
  for (int& i : g.inputs) i = remap[i];
  for (int& o : g.outputs) o = remap[o];
  // Buffers: keep those referenced, in first-use order.
  std::vector<int64_t> bmap(m.buffers.size(), -1);
  std::vector<ir::Blob> buffers;
  auto map_buf = [&](uint32_t& b) {
    if (bmap[b] < 0) {
      bmap[b] = int64_t(buffers.size());
      buffers.push_back(m.buffers[b]);
    }
    b = uint32_t(bmap[b]);
  };
  for (auto& t : g.tensors)
    for (auto& st : t.encodings) {
      if (auto* d = std::get_if<ir::DenseStage>(&st)) map_buf(d->buffer);
      if (auto* s = std::get_if<ir::SparseStage>(&st)) {
        if (s->index == ir::SparseIndex::kRelative) {
          map_buf(s->index_buffer);
          s->row_ptr = s->col_idx = 0;  // unused
        } else {
          map_buf(s->row_ptr);
          map_buf(s->col_idx);
        }
      }
      if (auto* c = std::get_if<ir::CodebookStage>(&st)) {
        if (&st == &t.encodings.back()) map_buf(c->indices);
        else c->indices = 0;  // unused when an inner stage supplies the indices
      }
      if (auto* h = std::get_if<ir::HuffmanStage>(&st)) map_buf(h->bitstream);
    }
  m.buffers = std::move(buffers);
}

std::vector<WeightRef> weight_tensors(const ir::ModelIR& m) {
  std::vector<WeightRef> r;
  const auto& g = m.graph;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const auto& node = g.nodes[n];
    auto make_ref = [&](int node_index, int w, const Shape& s) {
      WeightRef ref;
      ref.node = node_index;
      ref.tensor = w;
      ref.name = g.tensors[size_t(w)].name;
      ref.op = node.op;
      ref.rows = s[0];
      ref.cols = shape_elements(s) / s[0];
      return ref;
    };
    if (!node.domain.empty() || node.inputs.size() < 2) continue;
    if (node.op == "LSTM" || node.op == "GRU" || node.op == "RNN") {
      // Input (W) and recurrent (R) gate weights [directions, gates x hidden, in]: one
      // output channel per gate row (axis 1).
      for (size_t k = 1; k <= 2 && k < node.inputs.size(); ++k) {
        int w = node.inputs[k];
        if (w < 0 || !is_constant(m, w) || g.tensors[w].dtype != DataType::kFloat32) continue;
        Shape s = g.tensors[w].static_shape();
        if (s.size() != 3) continue;
        r.push_back(make_ref(int(n), w, s));
        r.back().out_axis = 1;
      }
      continue;
    }
    if (node.op != "Gemm" && node.op != "MatMul" && node.op != "Conv") continue;
    int w = node.inputs[1];
    if (!is_constant(m, w) || g.tensors[w].dtype != DataType::kFloat32) continue;
    Shape s = g.tensors[w].static_shape();
    if (s.size() < 2) continue;
    WeightRef ref = make_ref(int(n), w, s);
    if (node.op == "Conv") ref.out_axis = 0;
    else if (node.op == "MatMul") ref.out_axis = int(s.size()) - 1;
    else {
      const ir::Attribute* tb = node.attr("transB");
      ref.out_axis = (tb && tb->i) ? 0 : 1;
    }
    if (node.op == "MatMul" && s.size() != 2) continue;
    r.push_back(ref);
  }
  return r;
}

std::vector<int> bias_tensors(const ir::ModelIR& m) {
  std::vector<int> r;
  const auto& g = m.graph;
  for (const auto& node : g.nodes) {
    if (!node.domain.empty()) continue;
    size_t k = 0;
    if (node.op == "Gemm" || node.op == "Conv") k = 2;
    else if (node.op == "LSTM" || node.op == "GRU" || node.op == "RNN") k = 3;
    else continue;
    if (k >= node.inputs.size()) continue;
    int b = node.inputs[k];
    if (b < 0 || !is_constant(m, b) || g.tensors[size_t(b)].dtype != DataType::kFloat32) continue;
    if (std::find(r.begin(), r.end(), b) == r.end()) r.push_back(b);
  }
  return r;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (static_cast<unsigned char>(c) < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += c;
  }
  return o;
}

}  // namespace compress
}  // namespace minnow
