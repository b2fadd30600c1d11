// ONNX ModelProto -> Minnow model (ir::ModelIR / .minnow bytes).
#pragma once

#include <minnow/ir.h>
#include <minnow/status.h>

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

namespace minnow {
namespace onnx_frontend {

struct ImportOptions {
  // Evaluate nodes whose inputs are all known at import (shape subgraphs) and store
  // their results as constants.
  bool fold_constants = true;
  // Largest folded output, in elements (bigger results stay nodes).
  int64_t max_fold_elements = 1 << 16;
};

// `origin` names the model in messages; `base_dir` is where external data files live.
Result<ir::ModelIR> convert_model(const onnx::ModelProto& model, const std::string& origin,
                                  const std::string& base_dir, const ImportOptions& options,
                                  std::vector<std::string>* notes);

// Reads and converts a file.
Result<std::vector<uint8_t>> import_file(const std::string& path, const ImportOptions& options,
                                         std::vector<std::string>* notes);

// Folds constant subgraphs in place (onnx_fold.cc). Returns the number of nodes folded.
// `static_shapes`: fully known shapes of intermediate tensors (from ONNX shape inference),
// so Shape / Size of them fold too.
Result<int> fold_constants(ir::ModelIR& model, const ImportOptions& options,
                           const std::map<std::string, Shape>& static_shapes = {});

// Drops constants that nothing references any more, and their buffers.
void remove_unused_constants(ir::ModelIR& model);

}  // namespace onnx_frontend
}  // namespace minnow
