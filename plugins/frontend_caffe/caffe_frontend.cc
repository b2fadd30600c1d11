// The Caffe frontend plugin: registers an mn_frontend for .prototxt files (the weights
// come as option weights=FILE.caffemodel; the CLI passes --weights as that option).
// Options (mn_options):
//   weights=FILE            the .caffemodel (weights are matched by layer name)
//   input_shape=NAME:DIMS   override input dims, e.g. data:1x3x135x104 (';' separates several)
//   outputs=A,B             graph outputs (default: blobs no layer reads, as in Caffe)
#include "caffe_convert.h"
#include "caffe_error.h"

#include <minnow/plugin.hpp>

#include <cctype>
#include <cstring>
#include <sstream>
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

int probe(void*, const char* path) {
  if (!path) return 0;
  std::string p(path);
  // A .caffemodel alone is claimed too, so the user hears what to give instead of
  // "no frontend reads this file".
  return ends_with(p, ".prototxt") || ends_with(p, ".caffemodel") ? 1 : 0;
}

mn_status import_model(void*, const mn_host_api* host, const char* path, const mn_options* options, mn_blob* out,
                       mn_error* err) {
  return guarded(err, [&]() -> mn_status {
    using minnow::caffe::CaffeError;
    try {
      std::string p(path ? path : "");
      if (ends_with(p, ".caffemodel"))
        throw CaffeError("'" + p + "' holds only weights: import the deploy .prototxt and give this file as its weights "
                         "(minnow run NET.prototxt --weights " + p + ", or option weights=" + p + ")");
      minnow::caffe::ImportOptions opt;
      if (options)
        for (int32_t i = 0; i < options->count; ++i) {
          std::string k = options->keys[i], v = options->values[i];
          if (k == "weights") {
            opt.weights_path = v;
          } else if (k == "input_shape") {
            for (auto& kv : minnow::caffe::parse_input_shapes(v)) opt.input_shapes[kv.first] = kv.second;
          } else if (k == "outputs") {
            std::stringstream ss(v);
            std::string o;
            while (std::getline(ss, o, ','))
              if (!o.empty()) opt.outputs.push_back(o);
          } else {
            throw CaffeError("unknown option '" + k + "' for the Caffe frontend (known: weights, input_shape, outputs)");
          }
        }
      std::vector<std::string> notes;
      auto bytes = minnow::caffe::import_caffe(p, opt, &notes);
      if (host && host->log)
        for (const auto& n : notes) host->log(host->host, MN_LOG_DEBUG, (p + ": " + n).c_str());
      uint8_t* mem = host && host->blob_alloc ? host->blob_alloc(bytes.size()) : nullptr;
      if (!mem) throw PluginError("out of memory", MN_ERR_OUT_OF_MEMORY);
      std::memcpy(mem, bytes.data(), bytes.size());
      out->data = mem;
      out->size = bytes.size();
      out->free_fn = host->blob_free;
      return MN_OK;
    } catch (const CaffeError& e) {
      throw PluginError(e.what(), e.kind() == CaffeError::kUnsupported ? MN_ERR_UNSUPPORTED
                                  : e.kind() == CaffeError::kIo       ? MN_ERR_IO
                                                                      : MN_ERR_INVALID_ARGUMENT);
    }
  });
}

mn_status register_plugin(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  static mn_frontend fe;
  std::memset(&fe, 0, sizeof fe);
  fe.struct_size = sizeof(mn_frontend);
  fe.name = "caffe";
  fe.file_extensions = ".prototxt,.caffemodel";
  fe.probe = probe;
  fe.import_model = import_model;
  mn_status st = reg->add_frontend(reg->host, &fe);
  if (st != MN_OK) minnow::plugin::set_error(err, "cannot register the Caffe frontend");
  return st;
}

}  // namespace

MINNOW_DEFINE_PLUGIN("frontend_caffe", "0.1.0", "Caffe importer (prototxt + caffemodel, V1 and current layers)",
                     register_plugin)
