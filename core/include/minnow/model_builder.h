// Builds models in code (tests, frontends, transforms) and writes them atomically.
//
//   ModelBuilder b("mlp");
//   b.add_input("x", DataType::kFloat32, {{-1, "N"}, {784}});
//   b.add_constant("w", weights);
//   b.add_node("Gemm", {"x", "w", "b"}, {"y"}, {Attr::Int("transB", 1)});
//   b.add_output("y");
//   auto model = b.build();
#pragma once

#include <minnow/export.h>

#include <minnow/ir.h>
#include <minnow/model.h>
#include <minnow/status.h>

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace minnow {

using Attr = ir::Attribute;

class MINNOW_API ModelBuilder {
 public:
  explicit ModelBuilder(std::string graph_name = "main");
  // Starts from an existing model (transforms): everything is copied, buffers shared.
  explicit ModelBuilder(ir::ModelIR ir);

  // Graph input with fixed dims.
  int add_input(const std::string& name, DataType dtype, const Shape& shape);
  // Graph input with symbolic dims (value -1 + symbol).
  int add_input(const std::string& name, DataType dtype, const std::vector<ir::Dim>& shape);
  // Constant stored dense (data copied).
  int add_constant(const std::string& name, const Tensor& value);
  // An intermediate tensor (shape from inference). Returns the existing index if present.
  int tensor(const std::string& name);
  // Adds a node; input names "" mean an omitted optional input. Unknown names become
  // intermediate tensors. Returns the node index.
  int add_node(const std::string& op, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs, std::vector<Attr> attributes = {},
               const std::string& name = "", const std::string& domain = "",
               int op_version = 13);
  void add_output(const std::string& name);
  void set_metadata(const std::string& key, const std::string& value);
  void set_producer(const std::string& producer) { ir_.producer = producer; }
  // Appends a buffer; returns its index.
  uint32_t add_buffer(const void* data, size_t size);

  ir::ModelIR& ir() { return ir_; }
  const ir::ModelIR& ir() const { return ir_; }

  Result<std::vector<uint8_t>> serialize() const;
  Result<std::shared_ptr<const Model>> build() const;
  // Writes to `path` atomically (temporary file in the same folder, then rename).
  Status write(const std::string& path) const;

 private:
  ir::ModelIR ir_;
  std::map<std::string, int> by_name_;
};

// Writes bytes to `path` atomically: a half-written file never replaces a good one.
MINNOW_API Status write_file_atomic(const std::string& path, const void* data, size_t size);
MINNOW_API Result<std::vector<uint8_t>> read_file(const std::string& path);

}  // namespace minnow
