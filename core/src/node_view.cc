#include "node_view.h"

#include "registry.h"

#include <cstdio>
#include <cstring>

namespace minnow {

std::vector<TensorState> initial_tensor_states(const Model& model) {
  const auto& g = model.graph();
  std::vector<TensorState> st(g.tensors.size());
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const auto& t = g.tensors[i];
    st[i].dtype = t.dtype;
    if (t.has_shape) {
      st[i].dims = t.static_shape();
      st[i].rank = static_cast<int>(st[i].dims.size());
    }
    if (const Tensor* c = model.constant(static_cast<int>(i))) {
      st[i].value = const_cast<void*>(c->raw());
      st[i].is_constant = true;
      st[i].dims = c->shape();
      st[i].rank = static_cast<int>(c->shape().size());
    }
  }
  return st;
}

void fill_mn_tensor(const ir::TensorInfo& info, const TensorState& st, mn_tensor* out) {
  std::memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(mn_tensor);
  out->name = info.name.c_str();
  out->dtype = static_cast<int32_t>(st.dtype);
  out->rank = st.rank;
  for (int i = 0; i < st.rank && i < MN_MAX_RANK; ++i) out->dims[i] = st.dims[i];
  out->data = st.value;
  out->is_constant = st.is_constant ? 1 : 0;
  out->quant_axis = info.quant.axis;
  out->quant_count = static_cast<int32_t>(info.quant.scale.size());
  out->quant_scale = info.quant.scale.empty() ? nullptr : info.quant.scale.data();
  out->quant_zero_point = info.quant.zero_point.empty() ? nullptr : info.quant.zero_point.data();
}

namespace {

const ir::Attribute* find_attr(const void* ctx, const char* name) {
  return static_cast<const NodeView::AttrCtx*>(ctx)->node->attr(name ? name : "");
}

}  // namespace

NodeView::NodeView(const Model& model, int node_index, const std::vector<TensorState>& states) {
  const auto& g = model.graph();
  const ir::Node& n = g.nodes[node_index];
  ctx_.node = &n;
  ctx_.model = &model;
  static const ir::TensorInfo absent_info{};
  for (int32_t in : n.inputs) {
    mn_tensor t;
    if (in < 0) {
      TensorState none;
      fill_mn_tensor(absent_info, none, &t);
      t.name = "";
    } else {
      fill_mn_tensor(g.tensors[in], states[in], &t);
    }
    inputs_.push_back(t);
  }
  for (int32_t out : n.outputs) {
    mn_tensor t;
    fill_mn_tensor(g.tensors[out], states[out], &t);
    outputs_.push_back(t);
  }
  for (const auto& a : n.attributes) {
    if (a.type != ir::AttrType::kTensor) continue;
    mn_tensor t;
    TensorState st;
    if (const Tensor* c = model.constant(a.tensor)) {
      st.dtype = c->dtype();
      st.dims = c->shape();
      st.rank = static_cast<int>(c->shape().size());
      st.value = const_cast<void*>(c->raw());
      st.is_constant = true;
    }
    fill_mn_tensor(g.tensors[a.tensor], st, &t);
    ctx_.tensor_attrs.emplace_back(a.name, t);
  }
  for (const auto& a : n.attributes) {
    if (a.type != ir::AttrType::kStrings) continue;
    std::vector<const char*> list;
    for (const auto& str : a.strings) list.push_back(str.c_str());
    ctx_.string_lists.emplace_back(a.name, std::move(list));
  }
  node_.struct_size = sizeof(mn_node);
  node_.name = n.name.c_str();
  node_.domain = n.domain.c_str();
  node_.op = n.op.c_str();
  node_.op_version = n.op_version;
  node_.attr_ctx = &ctx_;
  node_.num_attrs = static_cast<int32_t>(n.attributes.size());
  node_.attr_type = [](const void* ctx, const char* name) -> mn_attr_type {
    const ir::Attribute* a = find_attr(ctx, name);
    return a ? static_cast<mn_attr_type>(a->type) : MN_ATTR_NONE;
  };
  node_.attr_int = [](const void* ctx, const char* name, int64_t* out) -> int {
    const ir::Attribute* a = find_attr(ctx, name);
    if (!a || a->type != ir::AttrType::kInt) return 0;
    if (out) *out = a->i;
    return 1;
  };
  node_.attr_float = [](const void* ctx, const char* name, float* out) -> int {
    const ir::Attribute* a = find_attr(ctx, name);
    if (!a) return 0;
    if (a->type == ir::AttrType::kFloat) {
      if (out) *out = a->f;
      return 1;
    }
    return 0;
  };
  node_.attr_string = [](const void* ctx, const char* name, const char** out) -> int {
    const ir::Attribute* a = find_attr(ctx, name);
    if (!a || a->type != ir::AttrType::kString) return 0;
    if (out) *out = a->s.c_str();
    return 1;
  };
  node_.attr_ints = [](const void* ctx, const char* name, const int64_t** out, size_t* count) -> int {
    const ir::Attribute* a = find_attr(ctx, name);
    if (!a || a->type != ir::AttrType::kInts) return 0;
    if (out) *out = a->ints.data();
    if (count) *count = a->ints.size();
    return 1;
  };
  node_.attr_floats = [](const void* ctx, const char* name, const float** out, size_t* count) -> int {
    const ir::Attribute* a = find_attr(ctx, name);
    if (!a || a->type != ir::AttrType::kFloats) return 0;
    if (out) *out = a->floats.data();
    if (count) *count = a->floats.size();
    return 1;
  };
  node_.attr_tensor = [](const void* ctx, const char* name, const mn_tensor** out) -> int {
    const auto* c = static_cast<const AttrCtx*>(ctx);
    for (const auto& ta : c->tensor_attrs)
      if (ta.first == (name ? name : "")) {
        if (out) *out = &ta.second;
        return 1;
      }
    return 0;
  };
  node_.attr_name = [](const void* ctx, int32_t i) -> const char* {
    const auto* c = static_cast<const AttrCtx*>(ctx);
    if (i < 0 || static_cast<size_t>(i) >= c->node->attributes.size()) return nullptr;
    return c->node->attributes[i].name.c_str();
  };
  node_.attr_strings = [](const void* ctx, const char* name, const char* const** out, size_t* count) -> int {
    const auto* c = static_cast<const AttrCtx*>(ctx);
    for (const auto& sl : c->string_lists)
      if (sl.first == (name ? name : "")) {
        if (out) *out = sl.second.data();
        if (count) *count = sl.second.size();
        return 1;
      }
    return 0;
  };
  refresh();
}

void NodeView::refresh() {
  node_.num_inputs = static_cast<int32_t>(inputs_.size());
  node_.inputs = inputs_.data();
  node_.num_outputs = static_cast<int32_t>(outputs_.size());
  node_.outputs = outputs_.data();
}

namespace {

struct ShapeHost {
  const Model* model;
  const ir::Node* node;
  std::vector<TensorState>* states;
  std::string error;
};

}  // namespace

Status infer_node_shapes(const Registry& registry, const Model& model, int node_index,
                         std::vector<TensorState>& states) {
  const ir::Node& n = model.graph().nodes[node_index];
  const OpEntry* op = registry.find_op(n.domain, n.op, n.op_version);
  if (!op) {
    std::string what = (n.domain.empty() ? "" : n.domain + "::") + n.op;
    if (registry.knows_op_name(n.domain, n.op))
      return unsupported(n.describe() + ": op " + what + " version " + std::to_string(n.op_version) + " is not supported by any loaded definition");
    return unsupported(n.describe() + ": no loaded plugin provides op '" + what + "' (add the plugin's folder to MINNOW_PLUGIN_PATH)");
  }
  NodeView view(model, node_index, states);
  ShapeHost host{&model, &n, &states, {}};
  mn_shape_ctx ctx{};
  ctx.struct_size = sizeof(mn_shape_ctx);
  ctx.host = &host;
  ctx.set_output = [](void* h, int32_t index, int32_t dtype, int32_t rank, const int64_t* dims) -> mn_status {
    auto* host = static_cast<ShapeHost*>(h);
    if (index < 0 || static_cast<size_t>(index) >= host->node->outputs.size()) return MN_ERR_INVALID_ARGUMENT;
    if (rank > MN_MAX_RANK || dtype <= 0 || dtype > MN_STRING) return MN_ERR_INVALID_ARGUMENT;
    TensorState& st = (*host->states)[host->node->outputs[index]];
    st.dtype = static_cast<DataType>(dtype);
    st.rank = rank;
    st.dims.assign(dims, dims + (rank > 0 ? rank : 0));
    for (int64_t& d : st.dims)
      if (d < -1) d = -1;
    return MN_OK;
  };
  ctx.set_output_value = [](void* h, int32_t index, const void* data, size_t bytes) -> mn_status {
    auto* host = static_cast<ShapeHost*>(h);
    if (index < 0 || static_cast<size_t>(index) >= host->node->outputs.size()) return MN_ERR_INVALID_ARGUMENT;
    TensorState& st = (*host->states)[host->node->outputs[index]];
    int64_t n = shape_elements(st.dims);
    if (!st.shape_known() || n < 0 || static_cast<size_t>(n) * dtype_size(st.dtype) != bytes)
      return MN_ERR_INVALID_ARGUMENT;
    st.owned = aligned_alloc_shared(bytes);
    if (bytes) std::memcpy(st.owned.get(), data, bytes);
    st.value = st.owned.get();
    return MN_OK;
  };
  ctx.set_output_bound = [](void* h, int32_t index) -> mn_status {
    auto* host = static_cast<ShapeHost*>(h);
    if (index < 0 || static_cast<size_t>(index) >= host->node->outputs.size()) return MN_ERR_INVALID_ARGUMENT;
    TensorState& st = (*host->states)[host->node->outputs[index]];
    if (st.rank < 0) return MN_ERR_INVALID_ARGUMENT;  // set_output first
    st.bounded = true;
    return MN_OK;
  };
  for (int32_t o : n.outputs) states[o].bounded = false;
  mn_error err{};
  mn_status s;
  try {
    s = op->def.infer_shapes(op->def.user, view.node(), &ctx, &err);
  } catch (...) {  // a C plugin must not throw; a C++ one without plugin.hpp's guard might
    s = MN_ERR_INTERNAL;
    std::snprintf(err.message, sizeof err.message, "exception escaped the shape function");
  }
  err.message[sizeof(err.message) - 1] = 0;
  if (s != MN_OK)
    return invalid_argument(n.describe() + ": shape inference failed" + (op->library ? " (plugin '" + op->library->name + "')" : std::string()) + ": " + (err.message[0] ? err.message : "status " + std::to_string(s)));
  for (int32_t o : n.outputs)
    if (states[o].dtype == DataType::kUndefined)
      return internal_error(n.describe() + ": shape function did not set output '" + model.graph().tensors[o].name + "'");
  bool bounded_input = false;
  for (int32_t in : n.inputs) bounded_input = bounded_input || (in >= 0 && states[in].bounded);
  if (bounded_input)
    for (int32_t o : n.outputs) states[o].bounded = true;
  return Status::ok();
}

}  // namespace minnow
