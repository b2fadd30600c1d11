// Images as model inputs (PNG, JPEG, PGM/PPM: image_decode.h): decode, resize (bilinear,
// half-pixel centres), channel order, normalisation x = (u / scale - mean[c]) / std[c],
// and layout (NCHW or NHWC), into a batch-1 float tensor.
#pragma once

#include <minnow/status.h>
#include <minnow/types.h>

#include <string>
#include <vector>

namespace minnow {
namespace cli {

struct ImageOptions {
  int width = 0, height = 0;  // 0: the model's size (or the image's own)
  std::vector<float> mean{0.f}, std{1.f};  // one value, or one per channel
  float scale = 255.f;
  bool bgr = false;
  bool nhwc = false;
};

// Limits on untrusted images, checked before decoding: the file's size, and the pixel count
// its header declares (kMaxImagePixels, image_decode.h: a few bytes of PNG can declare
// gigabytes).
constexpr int64_t kMaxImageFileBytes = int64_t(256) << 20;

bool is_image_path(const std::string& path);
// `shape` is the model input's shape (dims may be -1); channels, height and width are
// taken from it where known.
Result<Tensor> read_image_tensor(const std::string& path, const Shape& shape, const ImageOptions& opt);
// The same from the file's bytes (`path` only names it in messages).
Result<Tensor> decode_image_tensor(const uint8_t* data, size_t size, const std::string& path, const Shape& shape,
                                  const ImageOptions& opt);

// Bilinear resize of interleaved 8-bit pixels (half-pixel centres, as align_corners=false).
std::vector<float> resize_bilinear(const uint8_t* src, int w, int h, int c, int ow, int oh);

}  // namespace cli
}  // namespace minnow
