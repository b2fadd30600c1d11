// stb_image_write's implementation for the test images (test_images.h). Its JPEG writer
// shifts negative ints left (stbiw__jpg_writeBits), which C++17 leaves undefined and every
// compiler does as two's complement; the sanitizer builds compile this file without that
// one check (tests/CMakeLists.txt), since it is test-only code we do not own.
#include "test_images.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace minnow {
namespace test {

std::vector<uint8_t> encode_image(ImageFormat format, int w, int h, int c, const std::vector<uint8_t>& pixels) {
  std::vector<uint8_t> out;
  auto sink = [](void* ctx, void* data, int size) {
    auto* v = static_cast<std::vector<uint8_t>*>(ctx);
    v->insert(v->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
  };
  switch (format) {
    case ImageFormat::kPng: stbi_write_png_to_func(sink, &out, w, h, c, pixels.data(), w * c); break;
    case ImageFormat::kBmp: stbi_write_bmp_to_func(sink, &out, w, h, c, pixels.data()); break;
    case ImageFormat::kJpeg: stbi_write_jpg_to_func(sink, &out, w, h, c, pixels.data(), 100); break;
    case ImageFormat::kPnm: {
      const std::string header = std::string(c == 1 ? "P5" : "P6") + "\n" + std::to_string(w) + " " +
                                 std::to_string(h) + "\n255\n";
      out.assign(header.begin(), header.end());
      out.insert(out.end(), pixels.begin(), pixels.end());
      break;
    }
  }
  return out;
}

}  // namespace test
}  // namespace minnow
