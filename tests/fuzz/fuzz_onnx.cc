// Fuzz target: the ONNX frontend's import (ModelProto bytes -> ir::ModelIR, with ONNX shape
// inference and import-time constant folding), then our loader on the result.
#include "onnx_import.h"

#include <minnow/minnow.h>

#include <exception>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  minnow::set_log_level("off");
  minnow::set_max_decoded_constant_bytes(64 << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  std::vector<std::string> notes;
  minnow::onnx_frontend::ImportOptions opt;
  try {
    // External data stays unreadable: the base folder does not exist.
    auto ir = minnow::onnx_frontend::convert_model(proto, "fuzz.onnx", "/nonexistent-minnow-fuzz", opt, &notes);
    if (!ir) return 0;
    auto bytes = minnow::serialize_model(ir.value());
    if (!bytes) return 0;
    (void)minnow::Model::load_bytes(std::move(bytes.value()), "fuzz.onnx");
  } catch (const std::exception&) {
    // The plugin entry (guarded()) turns exceptions into an error status: not a crash.
  }
  return 0;
}
