// C++ helpers for frontend and transform plugins, over the C ABI (plugin.h) and plugin.hpp:
// handing result bytes to the host as an mn_blob, and filling an mn_frontend table from two
// plain functions. A header of its own, next to plugin.hpp, so that backends and op plugins
// (most of the plugin code) do not depend on it. Nothing here depends on libminnow.
#pragma once

#include <minnow/plugin.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace minnow {
namespace plugin {

// Copies `size` bytes into memory from the host's allocator (host->blob_alloc): the form
// in which frontends and transforms return models and reports, freed by the host.
// Throws PluginError (MN_ERR_OUT_OF_MEMORY) when the host cannot allocate.
inline void export_blob(const mn_host_api* host, const void* data, size_t size, mn_blob* out) {
  uint8_t* mem = host && host->blob_alloc && host->blob_free ? host->blob_alloc(size ? size : 1) : nullptr;
  if (!mem) throw PluginError("out of memory (" + std::to_string(size) + " bytes for the result)", MN_ERR_OUT_OF_MEMORY);
  if (size) std::memcpy(mem, data, size);
  out->data = mem;
  out->size = size;
  out->free_fn = host->blob_free;
}
template <class Bytes>  // std::vector<uint8_t>, std::string ...
inline void export_blob(const mn_host_api* host, const Bytes& bytes, mn_blob* out) {
  export_blob(host, bytes.data(), bytes.size() * sizeof(bytes[0]), out);
}

// The options the host passed (`--opt key=value`), in order.
using OptionList = std::vector<std::pair<std::string, std::string>>;
inline OptionList option_list(const mn_options* options) {
  OptionList r;
  if (options)
    for (int32_t i = 0; i < options->count; ++i)
      r.emplace_back(options->keys[i] ? options->keys[i] : "", options->values[i] ? options->values[i] : "");
  return r;
}

// Does `path` end with `ext` (".onnx"), ignoring ASCII case? For a frontend's probe.
inline bool has_extension(const std::string& path, const char* ext) {
  const size_t n = std::strlen(ext);
  if (path.size() < n) return false;
  for (size_t i = 0; i < n; ++i) {
    char c = path[path.size() - n + i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != ext[i]) return false;
  }
  return true;
}

// Fills a frontend table from two plain functions:
//   bool Probe(const std::string& path)   cheap: extension or magic bytes
//   std::vector<uint8_t> Import(const mn_host_api*, const std::string& path, const OptionList&)
// Import returns the .minnow bytes or throws (PluginError, or any exception: guarded()
// reports it). Functions, not an object: mn_frontend has no destroy, so it owns nothing.
// `name` and `extensions` must outlive the registration (string literals).
using FrontendProbe = bool (*)(const std::string& path);
using FrontendImport = std::vector<uint8_t> (*)(const mn_host_api* host, const std::string& path,
                                                const OptionList& options);
template <FrontendProbe Probe, FrontendImport Import>
inline void export_frontend(const char* name, const char* extensions, mn_frontend* out) {
  std::memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(mn_frontend);
  out->name = name;
  out->file_extensions = extensions;
  out->probe = [](void*, const char* path) -> int {
    try {
      return path && Probe(path) ? 1 : 0;
    } catch (...) {
      return 0;
    }
  };
  out->import_model = [](void*, const mn_host_api* host, const char* path, const mn_options* options,
                         mn_blob* model, mn_error* err) -> mn_status {
    return guarded(err, [&] {
      export_blob(host, Import(host, path ? path : "", option_list(options)), model);
      return MN_OK;
    });
  };
}

}  // namespace plugin
}  // namespace minnow
