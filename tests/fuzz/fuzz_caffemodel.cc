// Fuzz target: the Caffe frontend's .caffemodel (protobuf wire format) reader, and the
// conversion of a real net (MTCNN det1) with the weights read, so blob shapes and counts
// that disagree with the layers are exercised too.
#include "caffe_convert.h"
#include "caffe_error.h"
#include "caffe_weights.h"

#include <minnow/minnow.h>

#include <fstream>
#include <sstream>

namespace {
std::string g_prototxt;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  minnow::set_log_level("off");
  minnow::set_max_decoded_constant_bytes(64 << 20);
  std::ifstream in(MINNOW_FUZZ_CAFFE_PROTOTXT);
  std::stringstream ss;
  ss << in.rdbuf();
  g_prototxt = ss.str();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto weights = minnow::caffe::parse_caffemodel(data, size, "fuzz.caffemodel");
    minnow::caffe::ImportOptions opt;
    auto bytes = minnow::caffe::import_caffe_text(g_prototxt, "det1.prototxt", &weights, "fuzz.caffemodel", opt);
    (void)minnow::Model::load_bytes(std::move(bytes), "fuzz.caffemodel");
  } catch (const std::exception&) {
    // CaffeError (and bad_alloc) become an error status at the plugin entry.
  }
  return 0;
}
