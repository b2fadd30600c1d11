// The ONNX frontend plugin: registers an mn_frontend that turns .onnx files into .minnow
// bytes. Options (mn_options): fold=0|1 (import-time constant folding, default 1),
// max_fold_elements=N.
#include "onnx_import.h"

#include <minnow/plugin_io.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

using minnow::plugin::PluginError;

// A ModelProto starts with field 1 (ir_version, varint: tag 0x08) in every exporter we
// know; other leading fields (producer_name 0x12, graph 0x3a, opset_import 0x42) are
// accepted too.
bool looks_like_model_proto(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (!f) return false;
  unsigned char head[2] = {0, 0};
  size_t got = std::fread(head, 1, 2, f);
  std::fclose(f);
  if (got < 2) return false;
  return head[0] == 0x08 && head[1] >= 1 && head[1] <= 20;
}

bool probe(const std::string& path) {
  using minnow::plugin::has_extension;
  if (has_extension(path, ".onnx")) return true;
  if (has_extension(path, ".minnow")) return false;
  return looks_like_model_proto(path.c_str());
}

std::vector<uint8_t> import_model(const mn_host_api* host, const std::string& path,
                                  const minnow::plugin::OptionList& options) {
  minnow::onnx_frontend::ImportOptions opt;
  for (const auto& [k, v] : options) {
    if (k == "fold") opt.fold_constants = v != "0" && v != "false";
    else if (k == "max_fold_elements") opt.max_fold_elements = std::stoll(v);
  }
  std::vector<std::string> notes;
  auto bytes = minnow::onnx_frontend::import_file(path, opt, &notes);
  if (!bytes) {
    mn_status st = bytes.status().code() == minnow::StatusCode::kUnsupported ? MN_ERR_UNSUPPORTED
                   : bytes.status().code() == minnow::StatusCode::kIo        ? MN_ERR_IO
                                                                             : MN_ERR_INVALID_ARGUMENT;
    throw PluginError(bytes.status().message(), st);
  }
  if (host && host->log)
    for (const auto& n : notes) host->log(host->host, MN_LOG_DEBUG, (path + ": " + n).c_str());
  return std::move(bytes.value());
}

mn_status register_plugin(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  static mn_frontend fe;
  minnow::plugin::export_frontend<probe, import_model>("onnx", ".onnx", &fe);
  mn_status st = reg->add_frontend(reg->host, &fe);
  if (st != MN_OK) minnow::plugin::set_error(err, "cannot register the ONNX frontend");
  return st;
}

}  // namespace

MINNOW_DEFINE_PLUGIN("frontend_onnx", "0.1.0", "ONNX importer (opsets 6-17, default domain)", register_plugin)
