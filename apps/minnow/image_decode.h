// Decoding untrusted image files into 8-bit interleaved pixels, by format: PNG through
// libpng, JPEG through libjpeg-turbo (both Debian's, both fuzzed upstream for years), binary
// PGM/PPM by our own few lines. Debian's stb_image 2.27 is not used: our fuzz_image target
// found, within minutes, an out-of-bounds write in its JPEG Huffman table builder
// (stbi__build_huffman) and a heap overflow in its 16-bit PNM conversion
// (stbi__convert_16_to_8); both inputs are in tests/fuzz/regressions/fuzz_image/.
// The declared size is checked against kMaxImagePixels from the header, before any
// pixel memory is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace minnow {
namespace cli {

constexpr int64_t kMaxImagePixels = int64_t(1) << 25;  // 32 Mpx, e.g. 8192 x 4096

struct DecodedImage {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;  // height x width x channels
};

// channels: 1 (grey) or 3 (RGB); colour images are converted as the decoder does.
// Returns an empty string on success, else what is wrong (without the file's name).
std::string decode_image(const uint8_t* data, size_t size, int channels, DecodedImage* out);

}  // namespace cli
}  // namespace minnow
