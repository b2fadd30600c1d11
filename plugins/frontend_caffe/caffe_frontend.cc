// The Caffe frontend plugin: registers an mn_frontend for .prototxt files (the weights
// come as option weights=FILE.caffemodel; the CLI passes --weights as that option).
// Options (mn_options):
//   weights=FILE            the .caffemodel (weights are matched by layer name)
//   input_shape=NAME:DIMS   override input dims, e.g. data:1x3x135x104 (';' separates several)
//   outputs=A,B             graph outputs (default: blobs no layer reads, as in Caffe)
#include "caffe_convert.h"
#include "caffe_error.h"

#include <minnow/plugin_io.hpp>

#include <cstring>
#include <sstream>
#include <string>

namespace {

using minnow::plugin::has_extension;
using minnow::plugin::PluginError;

bool probe(const std::string& path) {
  // A .caffemodel alone is claimed too, so the user hears what to give instead of
  // "no frontend reads this file".
  return has_extension(path, ".prototxt") || has_extension(path, ".caffemodel");
}

std::vector<uint8_t> import_model(const mn_host_api* host, const std::string& p,
                                  const minnow::plugin::OptionList& options) {
  using minnow::caffe::CaffeError;
  try {
    if (has_extension(p, ".caffemodel"))
      throw CaffeError("'" + p + "' holds only weights: import the deploy .prototxt and give this file as its weights "
                       "(minnow run NET.prototxt --weights " + p + ", or option weights=" + p + ")");
    minnow::caffe::ImportOptions opt;
    for (const auto& [k, v] : options) {
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
    return bytes;
  } catch (const CaffeError& e) {
    throw PluginError(e.what(), e.kind() == CaffeError::kUnsupported ? MN_ERR_UNSUPPORTED
                                : e.kind() == CaffeError::kIo       ? MN_ERR_IO
                                                                    : MN_ERR_INVALID_ARGUMENT);
  }
}

mn_status register_plugin(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  static mn_frontend fe;
  minnow::plugin::export_frontend<probe, import_model>("caffe", ".prototxt,.caffemodel", &fe);
  mn_status st = reg->add_frontend(reg->host, &fe);
  if (st != MN_OK) minnow::plugin::set_error(err, "cannot register the Caffe frontend");
  return st;
}

}  // namespace

MINNOW_DEFINE_PLUGIN("frontend_caffe", "0.1.0", "Caffe importer (prototxt + caffemodel, V1 and current layers)",
                     register_plugin)
