// Small images encoded in memory for the image reader's tests and fuzz seeds, with Debian's
// stb_image_write (library minnow_test_images, test_images.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace minnow {
namespace test {

enum class ImageFormat { kPng, kBmp, kJpeg, kPnm };

// Interleaved 8-bit pixels (w x h x c, c = 1 or 3) encoded as `format` (JPEG at quality
// 100; PNM is binary PGM for c = 1, PPM for c = 3).
std::vector<uint8_t> encode_image(ImageFormat format, int w, int h, int c, const std::vector<uint8_t>& pixels);

}  // namespace test
}  // namespace minnow
