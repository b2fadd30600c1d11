// Fuzz target: the image reader of `minnow run` (PNG via libpng, JPEG via libjpeg-turbo,
// PGM/PPM by apps/minnow/image_decode.cc), with the header checks, the resize and the
// normalisation behind it. Two model input shapes: a fixed grey 28x28 one (decode,
// then resize to it) and a free 3-channel one (the image's own size, as a model with
// symbolic height and width takes it).
#include "image_input.h"

#include <minnow/minnow.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minnow;
  using namespace minnow::cli;
  ImageOptions opt;
  (void)decode_image_tensor(data, size, "fuzz.png", Shape{1, 1, 28, 28}, opt);
  opt.bgr = true;
  opt.nhwc = true;
  opt.mean = {0.485f, 0.456f, 0.406f};
  (void)decode_image_tensor(data, size, "fuzz.png", Shape{1, -1, -1, 3}, opt);
  return 0;
}
