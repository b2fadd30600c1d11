#include <minnow/model_builder.h>

#include <minnow/version.h>

namespace minnow {

ModelBuilder::ModelBuilder(std::string graph_name) {
  ir_.graph.name = std::move(graph_name);
  ir_.producer = std::string("minnow ") + MINNOW_VERSION;
  ir_.opsets.push_back(ir::OpsetImport{"", 13});
}

ModelBuilder::ModelBuilder(ir::ModelIR ir) : ir_(std::move(ir)) {
  for (size_t i = 0; i < ir_.graph.tensors.size(); ++i) by_name_[ir_.graph.tensors[i].name] = static_cast<int>(i);
}

int ModelBuilder::tensor(const std::string& name) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  ir::TensorInfo t;
  t.name = name;
  t.has_shape = false;
  ir_.graph.tensors.push_back(std::move(t));
  int idx = static_cast<int>(ir_.graph.tensors.size() - 1);
  by_name_[name] = idx;
  return idx;
}

int ModelBuilder::add_input(const std::string& name, DataType dtype, const Shape& shape) {
  std::vector<ir::Dim> dims;
  for (int64_t d : shape) dims.push_back(ir::Dim{d, d < 0 ? "N" : ""});
  return add_input(name, dtype, dims);
}

int ModelBuilder::add_input(const std::string& name, DataType dtype, const std::vector<ir::Dim>& shape) {
  int idx = tensor(name);
  auto& t = ir_.graph.tensors[idx];
  t.dtype = dtype;
  t.shape = shape;
  t.has_shape = true;
  ir_.graph.inputs.push_back(idx);
  return idx;
}

uint32_t ModelBuilder::add_buffer(const void* data, size_t size) {
  ir_.buffers.push_back(ir::Blob::copy_of(data, size));
  return static_cast<uint32_t>(ir_.buffers.size() - 1);
}

int ModelBuilder::add_constant(const std::string& name, const Tensor& value) {
  int idx = tensor(name);
  auto& t = ir_.graph.tensors[idx];
  t.dtype = value.dtype();
  t.shape.clear();
  for (int64_t d : value.shape()) t.shape.push_back(ir::Dim{d, ""});
  t.has_shape = true;
  uint32_t b = add_buffer(value.raw(), value.bytes());
  ir_.graph.tensors[idx].encodings = {ir::DenseStage{b, value.dtype()}};
  return idx;
}

int ModelBuilder::add_node(const std::string& op, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs, std::vector<Attr> attributes,
                           const std::string& name, const std::string& domain, int op_version) {
  ir::Node n;
  n.op = op;
  n.domain = domain;
  n.op_version = op_version;
  n.name = name.empty() ? op + "_" + std::to_string(ir_.graph.nodes.size()) : name;
  for (const auto& in : inputs) n.inputs.push_back(in.empty() ? -1 : tensor(in));
  for (const auto& out : outputs) n.outputs.push_back(tensor(out));
  n.attributes = std::move(attributes);
  ir_.graph.nodes.push_back(std::move(n));
  return static_cast<int>(ir_.graph.nodes.size() - 1);
}

void ModelBuilder::add_output(const std::string& name) { ir_.graph.outputs.push_back(tensor(name)); }

void ModelBuilder::set_metadata(const std::string& key, const std::string& value) {
  for (auto& kv : ir_.metadata)
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  ir_.metadata.emplace_back(key, value);
}

Result<std::vector<uint8_t>> ModelBuilder::serialize() const { return serialize_model(ir_); }

Result<std::shared_ptr<const Model>> ModelBuilder::build() const {
  auto bytes = serialize();
  if (!bytes) return bytes.status();
  return Model::load_bytes(std::move(bytes.value()), ir_.graph.name.empty() ? "<built>" : "<built:" + ir_.graph.name + ">");
}

Status ModelBuilder::write(const std::string& path) const {
  auto bytes = serialize();
  if (!bytes) return bytes.status().with_context("writing '" + path + "'");
  return write_file_atomic(path, bytes.value().data(), bytes.value().size());
}

}  // namespace minnow
