// The ONNX frontend plugin: registers an mn_frontend that turns .onnx files into .minnow
// bytes. Options (mn_options): fold=0|1 (import-time constant folding, default 1),
// max_fold_elements=N.
#include "onnx_import.h"

#include <minnow/plugin.hpp>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

using minnow::plugin::guarded;
using minnow::plugin::PluginError;

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}

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

int probe(void*, const char* path) {
  if (!path) return 0;
  std::string p(path);
  if (ends_with(p, ".onnx")) return 1;
  if (ends_with(p, ".minnow")) return 0;
  return looks_like_model_proto(path) ? 1 : 0;
}

mn_status import_model(void*, const mn_host_api* host, const char* path, const mn_options* options,
                       mn_blob* out, mn_error* err) {
  return guarded(err, [&]() -> mn_status {
    minnow::onnx_frontend::ImportOptions opt;
    if (options)
      for (int32_t i = 0; i < options->count; ++i) {
        std::string k = options->keys[i], v = options->values[i];
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
      for (const auto& n : notes) host->log(host->host, MN_LOG_DEBUG, (std::string(path) + ": " + n).c_str());
    const auto& v = bytes.value();
    uint8_t* mem = host && host->blob_alloc ? host->blob_alloc(v.size()) : nullptr;
    if (!mem) throw PluginError("out of memory", MN_ERR_OUT_OF_MEMORY);
    std::memcpy(mem, v.data(), v.size());
    out->data = mem;
    out->size = v.size();
    out->free_fn = host->blob_free;
    return MN_OK;
  });
}

mn_status register_plugin(const mn_host_api* host, const mn_registrar* reg, mn_error* err) {
  (void)host;
  static mn_frontend fe;
  std::memset(&fe, 0, sizeof fe);
  fe.struct_size = sizeof(mn_frontend);
  fe.name = "onnx";
  fe.file_extensions = ".onnx";
  fe.user = nullptr;
  fe.probe = probe;
  fe.import_model = import_model;
  mn_status st = reg->add_frontend(reg->host, &fe);
  if (st != MN_OK) minnow::plugin::set_error(err, "cannot register the ONNX frontend");
  return st;
}

}  // namespace

MINNOW_DEFINE_PLUGIN("frontend_onnx", "0.1.0", "ONNX importer (opsets 6-17, default domain)", register_plugin)
