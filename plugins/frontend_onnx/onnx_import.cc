#include "onnx_import.h"

#include "onnx_support.h"
#include "onnx_tensor.h"

#include <minnow/model_builder.h>
#include <minnow/version.h>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace minnow {
namespace onnx_frontend {

namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::string node_label(const onnx::NodeProto& n, int index) {
  std::string name = n.name().empty() ? "#" + std::to_string(index) : "'" + n.name() + "'";
  std::string dom = is_default_domain(n.domain()) ? "" : n.domain() + "::";
  return "node " + name + " (" + dom + n.op_type() + ")";
}

// Unique tensor names for things the ONNX graph leaves unnamed.
class Namer {
 public:
  explicit Namer(const onnx::GraphProto& g) {
    auto add = [&](const std::string& s) { used_.insert(s); };
    for (const auto& t : g.initializer()) add(t.name());
    for (const auto& v : g.input()) add(v.name());
    for (const auto& v : g.output()) add(v.name());
    for (const auto& n : g.node()) {
      for (const auto& s : n.input()) add(s);
      for (const auto& s : n.output()) add(s);
    }
  }
  std::string make(const std::string& base) {
    std::string s = base;
    for (int i = 1; used_.count(s); ++i) s = base + "_" + std::to_string(i);
    used_.insert(s);
    return s;
  }

 private:
  std::set<std::string> used_;
};

Result<ir::Attribute> convert_attribute(const onnx::AttributeProto& a, const std::string& node_name,
                                        const std::string& base_dir, ModelBuilder& b, Namer& namer) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return Attr::Int(a.name(), a.i());
    case onnx::AttributeProto::FLOAT: return Attr::Float(a.name(), a.f());
    case onnx::AttributeProto::STRING: return Attr::String(a.name(), a.s());
    case onnx::AttributeProto::INTS: return Attr::Ints(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case onnx::AttributeProto::FLOATS: return Attr::Floats(a.name(), std::vector<float>(a.floats().begin(), a.floats().end()));
    case onnx::AttributeProto::STRINGS: return Attr::Strings(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case onnx::AttributeProto::TENSOR: {
      auto t = tensor_from_proto(a.t(), base_dir);
      if (!t) return t.status();
      int idx = b.add_constant(namer.make(node_name + "/" + a.name()), t.value());
      return Attr::TensorRef(a.name(), idx);
    }
    default:
      return unsupported("attribute '" + a.name() + "' has an unsupported type");
  }
}

// The value of a Constant node.
Result<Tensor> constant_value(const onnx::NodeProto& n, const std::string& base_dir) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "value") return tensor_from_proto(a.t(), base_dir);
    if (a.name() == "value_float") return Tensor::from_vector<float>({}, {a.f()});
    if (a.name() == "value_floats") return Tensor::from_vector<float>({a.floats_size()}, std::vector<float>(a.floats().begin(), a.floats().end()));
    if (a.name() == "value_int") return Tensor::from_vector<int64_t>({}, {a.i()});
    if (a.name() == "value_ints") return Tensor::from_vector<int64_t>({a.ints_size()}, std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  }
  return unsupported("Constant without a supported value attribute");
}

int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  for (const auto& a : n.attribute())
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  return def;
}

// Fully known shapes of the graph's tensors by ONNX's own shape inference (with data
// propagation), used to fold Shape of intermediate tensors. Best effort: a model ONNX
// cannot infer simply folds less.
std::map<std::string, Shape> infer_static_shapes(const onnx::ModelProto& m) {
  std::map<std::string, Shape> out;
  onnx::ModelProto copy = m;
  for (auto& t : *copy.mutable_graph()->mutable_initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    if (n > 64) {  // large weights: type and dims are all inference needs
      t.clear_raw_data();
      t.clear_float_data();
      t.clear_int32_data();
      t.clear_int64_data();
      t.clear_double_data();
      t.clear_uint64_data();
      t.clear_data_location();
      t.clear_external_data();
    }
  }
  try {
    onnx::ShapeInferenceOptions opt(false, 0, true);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), opt);
  } catch (...) {
    return out;
  }
  auto take = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    Shape s;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return;
      s.push_back(d.dim_value());
    }
    out[vi.name()] = s;
  };
  for (const auto& vi : copy.graph().value_info()) take(vi);
  for (const auto& vi : copy.graph().output()) take(vi);
  return out;
}

}  // namespace

Result<ir::ModelIR> convert_model(const onnx::ModelProto& m, const std::string& origin,
                                  const std::string& base_dir, const ImportOptions& options,
                                  std::vector<std::string>* notes) {
  int opset = -1;
  for (const auto& o : m.opset_import())
    if (is_default_domain(o.domain())) opset = static_cast<int>(o.version());
  if (opset < 0 && m.opset_import_size() == 0 && m.ir_version() < 3) opset = 1;
  if (opset < 0) return invalid_argument(origin + ": the model imports no opset of the default ONNX domain");
  const onnx::GraphProto& g = m.graph();
  if (opset > kMaxOpset || opset < 1)
    return unsupported(origin + ": ONNX opset " + std::to_string(opset) + " is not supported (this frontend reads opsets " +
                       std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
  const int declared_opset = opset;
  if (opset < kMinOpset) {
    // An older opset is read as opset 6 when every op it uses is defined there exactly as
    // at opset 6 (the op has not changed since); otherwise it is refused, naming the ops.
    std::set<std::string> changed;
    for (const auto& n : g.node()) {
      if (!is_default_domain(n.domain())) continue;
      const onnx::OpSchema* old_s = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
      const onnx::OpSchema* new_s = onnx::OpSchemaRegistry::Schema(n.op_type(), kMinOpset, "");
      if (!old_s || !new_s || old_s->SinceVersion() != new_s->SinceVersion()) changed.insert(n.op_type());
    }
    if (!changed.empty()) {
      std::string list;
      for (const auto& c : changed) list += (list.empty() ? "" : ", ") + c;
      return unsupported(origin + ": ONNX opset " + std::to_string(opset) + " is not supported (this frontend reads opsets " +
                         std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + "); these ops changed since: " + list);
    }
    opset = kMinOpset;
  }
  ModelBuilder b(g.name().empty() ? "main" : g.name());
  b.set_producer(std::string("minnow ") + MINNOW_VERSION + " frontend_onnx");
  b.ir().opsets = {ir::OpsetImport{"", opset}};
  b.set_metadata("source_format", "onnx");
  b.set_metadata("onnx.opset", std::to_string(declared_opset));
  b.set_metadata("onnx.ir_version", std::to_string(m.ir_version()));
  if (!m.producer_name().empty())
    b.set_metadata("onnx.producer", m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version()));
  for (const auto& kv : m.metadata_props()) b.set_metadata("onnx.meta." + kv.key(), kv.value());
  Namer namer(g);

  // Every problem is collected, so one message lists them all.
  std::vector<std::string> problems;
  if (g.sparse_initializer_size() > 0) problems.push_back("graph: sparse initializers are not supported");

  std::set<std::string> constants;
  std::vector<std::string> converted;  // tensors whose element type changed
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) {
      problems.push_back("graph: an initializer has no name");
      continue;
    }
    auto v = tensor_from_proto(t, base_dir);
    if (!v) {
      problems.push_back("initializer '" + t.name() + "': " + v.status().message());
      continue;
    }
    b.add_constant(t.name(), v.value());
    constants.insert(t.name());
  }

  for (const auto& vi : g.input()) {
    if (constants.count(vi.name())) continue;  // an initializer with a default: a constant
    if (!vi.type().has_tensor_type()) {
      problems.push_back("graph input '" + vi.name() + "': only tensor inputs are supported");
      continue;
    }
    const auto& tt = vi.type().tensor_type();
    DataType dt;
    bool conv = false;
    if (!engine_dtype(tt.elem_type(), &dt, &conv)) {
      problems.push_back("graph input '" + vi.name() + "': element type " + onnx_type_name(tt.elem_type()) + " is not supported");
      continue;
    }
    if (conv) converted.push_back(vi.name() + " (" + onnx_type_name(tt.elem_type()) + ")");
    std::vector<ir::Dim> dims;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0) dims.push_back(ir::Dim{d.dim_value(), ""});
      else dims.push_back(ir::Dim{-1, d.has_dim_param() ? d.dim_param() : ""});
    }
    int idx = b.add_input(vi.name(), dt, dims);
    if (!tt.has_shape()) b.ir().graph.tensors[idx].has_shape = false;
  }
  for (const auto& vi : g.output())
    if (vi.type().has_tensor_type()) {
      DataType dt;
      bool conv = false;
      if (engine_dtype(vi.type().tensor_type().elem_type(), &dt, &conv) && conv)
        converted.push_back(vi.name() + " (" + onnx_type_name(vi.type().tensor_type().elem_type()) + ")");
    }

  // Support check for every node before converting any.
  std::vector<int> since(g.node_size(), 0);
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (!is_default_domain(n.domain())) {
      problems.push_back(node_label(n, i) + ": domain '" + n.domain() + "' is not supported (only the default ONNX domain)");
      continue;
    }
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
    if (!schema) {
      problems.push_back(node_label(n, i) + ": not an ONNX operator at opset " + std::to_string(opset));
      continue;
    }
    since[i] = schema->SinceVersion();
    if (!is_supported_op(n.op_type())) {
      problems.push_back(node_label(n, i) + ": op " + n.op_type() + " (version " + std::to_string(since[i]) + ") is not supported by the engine");
      continue;
    }
    for (const auto& a : n.attribute())
      if (!schema->attributes().count(a.name()))
        problems.push_back(node_label(n, i) + ": unknown attribute '" + a.name() + "' for " + n.op_type() + "-" + std::to_string(since[i]));
    std::string why = check_node(n, since[i]);
    if (!why.empty()) problems.push_back(node_label(n, i) + ": " + why);
  }
  if (!problems.empty()) {
    std::ostringstream msg;
    msg << origin << ": cannot import " << problems.size() << " unsupported item" << (problems.size() > 1 ? "s" : "") << ":";
    for (const auto& p : problems) msg << "\n  " << p;
    return unsupported(msg.str());
  }

  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
    if (n.op_type() == "Constant") {
      auto v = constant_value(n, base_dir);
      if (!v) return v.status().with_context(origin + ": " + node_label(n, i));
      if (n.output_size() != 1 || n.output(0).empty()) return invalid_argument(origin + ": " + node_label(n, i) + " must have one output");
      b.add_constant(n.output(0), v.value());
      continue;
    }
    std::vector<Attr> attrs;
    for (const auto& a : n.attribute()) {
      auto at = convert_attribute(a, name, base_dir, b, namer);
      if (!at) return at.status().with_context(origin + ": " + node_label(n, i));
      attrs.push_back(std::move(at.value()));
    }
    if (n.op_type() == "Cast") {
      // float16 / bfloat16 / double are float32 in the engine. A Cast to float16 or
      // bfloat16 still rounds to the values that type holds: round_to tells the kernel
      // (and constant folding) to do so.
      int64_t to = attr_int(n, "to", 0);
      if (to == onnx::TensorProto::FLOAT16 || to == onnx::TensorProto::BFLOAT16 || to == onnx::TensorProto::DOUBLE) {
        for (auto& a : attrs)
          if (a.name == "to") a.i = onnx::TensorProto::FLOAT;
        if (to != onnx::TensorProto::DOUBLE)
          attrs.push_back(Attr::String("round_to", to == onnx::TensorProto::FLOAT16 ? "float16" : "bfloat16"));
      }
    }
    std::vector<std::string> ins(n.input().begin(), n.input().end());
    std::vector<std::string> outs(n.output().begin(), n.output().end());
    while (!outs.empty() && outs.back().empty()) outs.pop_back();
    for (size_t o = 0; o < outs.size(); ++o)
      if (outs[o].empty()) outs[o] = namer.make(name + ":unused" + std::to_string(o));
    b.add_node(n.op_type(), ins, outs, std::move(attrs), name, "", since[i]);
  }
  for (const auto& vi : g.output()) b.add_output(vi.name());
  if (!converted.empty()) {
    std::string list;
    for (const auto& c : converted) list += (list.empty() ? "" : ", ") + c;
    b.set_metadata("onnx.converted_to_float32", list);
    if (notes) notes->push_back("inputs/outputs converted to float32: " + list);
  }

  ir::ModelIR ir = std::move(b.ir());
  if (options.fold_constants) {
    auto folded = fold_constants(ir, options, infer_static_shapes(m));
    if (!folded) return folded.status().with_context(origin);
    if (notes && folded.value() > 0) notes->push_back("folded " + std::to_string(folded.value()) + " constant nodes");
  }
  remove_unused_constants(ir);
  return ir;
}

Result<std::vector<uint8_t>> import_file(const std::string& path, const ImportOptions& options,
                                         std::vector<std::string>* notes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    return invalid_argument("'" + path + "': not a valid ONNX model (protobuf parse failed)");
  std::string base_dir;
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos) base_dir = path.substr(0, slash);
  auto ir = convert_model(model, "'" + path + "'", base_dir, options, notes);
  if (!ir) return ir.status();
  auto out = serialize_model(ir.value());
  if (!out) return out.status().with_context("'" + path + "'");
  return out;
}

}  // namespace onnx_frontend
}  // namespace minnow
