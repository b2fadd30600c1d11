// A loaded, verified model: immutable, shareable between threads. It holds the graph and
// every constant decoded to dense form once (zero-copy for dense data in an mmapped file).
#pragma once

#include <minnow/export.h>

#include <minnow/ir.h>
#include <minnow/status.h>
#include <minnow/types.h>

#include <memory>
#include <string>
#include <vector>

namespace minnow {

class MINNOW_API Model {
 public:
  // mmaps the file; a truncated or corrupt file is an error naming the file.
  static Result<std::shared_ptr<const Model>> load_file(const std::string& path);
  // Copies the bytes (callers need not keep them).
  static Result<std::shared_ptr<const Model>> load_memory(const void* data, size_t size,
                                                          const std::string& origin = "<memory>");
  // Takes the bytes.
  static Result<std::shared_ptr<const Model>> load_bytes(std::vector<uint8_t> bytes,
                                                         const std::string& origin = "<memory>");
  // Verifies an IR (as parse does) and decodes its constants.
  static Result<std::shared_ptr<const Model>> from_ir(ir::ModelIR ir,
                                                      const std::string& origin = "<memory>");

  const ir::ModelIR& ir() const { return ir_; }
  const ir::Graph& graph() const { return ir_.graph; }
  const std::string& origin() const { return origin_; }
  size_t file_size() const { return file_size_; }
  // Nodes in a topological order (verified acyclic at load).
  const std::vector<int>& topo_order() const { return topo_; }
  // Dense value of constant tensor `index`, or null if it is not a constant.
  const Tensor* constant(int index) const;
  // Bytes of all constant data as stored (encoded).
  size_t weight_bytes() const { return weight_bytes_; }

 private:
  Model() = default;
  ir::ModelIR ir_;
  std::string origin_;
  size_t file_size_ = 0;
  size_t weight_bytes_ = 0;
  std::vector<int> topo_;
  std::vector<Tensor> constants_;  // indexed by tensor; empty Tensor for activations
  std::vector<bool> is_constant_;
  friend struct ModelAccess;
};

// Decodes a constant's encoding chain into a dense tensor (validating every index).
MINNOW_API Result<Tensor> decode_constant(const ir::ModelIR& model, const ir::TensorInfo& tensor);

// Loading refuses a model whose encoded constants (sparse, codebook, Huffman) would decode
// to more than this many bytes in all, before allocating any of it: a few bytes of file
// can declare terabytes of zeros. Default 4 GiB. Process-wide; set it before loading.
MINNOW_API void set_max_decoded_constant_bytes(uint64_t bytes);
MINNOW_API uint64_t max_decoded_constant_bytes();

}  // namespace minnow
