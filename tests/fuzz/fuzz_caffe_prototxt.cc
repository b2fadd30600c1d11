// Fuzz target: the Caffe frontend's prototxt reader and converter (no weights: layers that
// need them fail cleanly, the rest converts), then our loader on the result.
#include "caffe_convert.h"
#include "caffe_error.h"
#include "caffe_text.h"

#include <minnow/minnow.h>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  minnow::set_log_level("off");
  minnow::set_max_decoded_constant_bytes(64 << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)minnow::caffe::parse_text(text, "fuzz.prototxt");
    minnow::caffe::ImportOptions opt;
    auto bytes = minnow::caffe::import_caffe_text(text, "fuzz.prototxt", nullptr, "", opt);
    (void)minnow::Model::load_bytes(std::move(bytes), "fuzz.prototxt");
  } catch (const std::exception&) {
    // CaffeError (and bad_alloc) become an error status at the plugin entry.
  }
  return 0;
}
