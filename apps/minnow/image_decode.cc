#include "image_decode.h"

#include <png.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

namespace minnow {
namespace cli {

namespace {

std::string too_large(int64_t w, int64_t h) {
  return "image of " + std::to_string(w) + "x" + std::to_string(h) + " pixels is larger than the " +
         std::to_string(kMaxImagePixels) + " pixels read";
}

bool size_ok(int64_t w, int64_t h) { return w > 0 && h > 0 && w * h <= kMaxImagePixels; }

std::string decode_png(const uint8_t* data, size_t size, int channels, DecodedImage* out) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, data, size)) return std::string("PNG: ") + image.message;
  std::unique_ptr<png_image, void (*)(png_image*)> guard(&image, png_image_free);
  if (!size_ok(image.width, image.height)) return too_large(image.width, image.height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  out->width = int(image.width), out->height = int(image.height), out->channels = channels;
  out->pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out->pixels.data(), 0, nullptr)) return std::string("PNG: ") + image.message;
  return {};
}

// libjpeg reports errors through error_exit, which must not return: it longjmps back into
// decode_jpeg_rows. Every C++ object touched there lives in the caller (no destructor is
// skipped by the jump).
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  cinfo->err->format_message(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void jpeg_quiet(j_common_ptr, int) {}  // warnings (corrupt but decodable data) are not printed

bool decode_jpeg_rows(jpeg_decompress_struct* cinfo, JpegError* err, const uint8_t* data, size_t size, int channels,
                      DecodedImage* out, std::string* why) {
  if (setjmp(err->jump)) {
    *why = std::string("JPEG: ") + err->message;
    return false;
  }
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  if (!size_ok(cinfo->image_width, cinfo->image_height)) {
    *why = too_large(cinfo->image_width, cinfo->image_height);
    return false;
  }
  cinfo->out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(cinfo);
  if (cinfo->output_components != channels) {
    *why = "JPEG: unsupported colour conversion";
    return false;
  }
  out->width = int(cinfo->output_width), out->height = int(cinfo->output_height), out->channels = channels;
  out->pixels.resize(size_t(out->width) * size_t(out->height) * size_t(channels));
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out->pixels.data() + size_t(cinfo->output_scanline) * size_t(out->width) * size_t(channels);
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

std::string decode_jpeg(const uint8_t* data, size_t size, int channels, DecodedImage* out) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.emit_message = jpeg_quiet;
  err.message[0] = 0;
  std::string why;
  const bool ok = decode_jpeg_rows(&cinfo, &err, data, size, channels, out, &why);
  jpeg_destroy_decompress(&cinfo);
  return ok ? std::string() : why;
}

// Binary PGM (P5) / PPM (P6): header "P5|P6 <ws> width <ws> height <ws> maxval <one ws>",
// '#' comments allowed between fields, then 1-byte samples (maxval < 256) or 2-byte
// big-endian ones, scaled to 0-255.
std::string decode_pnm(const uint8_t* data, size_t size, int channels, DecodedImage* out) {
  const int file_channels = data[1] == '5' ? 1 : 3;
  size_t at = 2;
  int64_t field[3];
  for (int64_t& v : field) {
    for (;;) {  // whitespace and comments
      while (at < size && std::isspace(data[at])) ++at;
      if (at < size && data[at] == '#') {
        while (at < size && data[at] != '\n') ++at;
        continue;
      }
      break;
    }
    if (at >= size || !std::isdigit(data[at])) return "PNM: bad header";
    v = 0;
    while (at < size && std::isdigit(data[at])) {
      v = v * 10 + (data[at++] - '0');
      if (v > (int64_t(1) << 31)) return "PNM: bad header";
    }
  }
  const int64_t w = field[0], h = field[1], maxval = field[2];
  if (at >= size || !std::isspace(data[at])) return "PNM: bad header";
  ++at;
  if (maxval < 1 || maxval > 65535) return "PNM: maxval " + std::to_string(maxval) + " outside 1-65535";
  if (!size_ok(w, h)) return w > 0 && h > 0 ? too_large(w, h) : "PNM: empty image";
  const size_t bytes_per = maxval < 256 ? 1 : 2;
  const size_t samples = size_t(w) * size_t(h) * size_t(file_channels);
  if (size - at < samples * bytes_per)
    return "PNM: " + std::to_string(size - at) + " bytes of pixels, " + std::to_string(samples * bytes_per) + " needed";
  const uint8_t* p = data + at;
  auto sample = [&](size_t i) -> int {
    const int64_t v = bytes_per == 1 ? p[i] : (int64_t(p[2 * i]) << 8) | p[2 * i + 1];
    return int((std::min(v, maxval) * 255 + maxval / 2) / maxval);
  };
  out->width = int(w), out->height = int(h), out->channels = channels;
  out->pixels.resize(size_t(w) * size_t(h) * size_t(channels));
  for (size_t px = 0; px < size_t(w) * size_t(h); ++px) {
    uint8_t* dst = &out->pixels[px * size_t(channels)];
    if (file_channels == channels) {
      for (int k = 0; k < channels; ++k) dst[k] = uint8_t(sample(px * size_t(channels) + size_t(k)));
    } else if (channels == 3) {  // grey to RGB
      dst[0] = dst[1] = dst[2] = uint8_t(sample(px));
    } else {  // RGB to grey, ITU-R BT.601 luma (as libpng and libjpeg do)
      const int r = sample(px * 3), g = sample(px * 3 + 1), b = sample(px * 3 + 2);
      dst[0] = uint8_t((r * 299 + g * 587 + b * 114 + 500) / 1000);
    }
  }
  return {};
}

bool starts_with(const uint8_t* data, size_t size, const char* magic, size_t n) {
  return size >= n && std::memcmp(data, magic, n) == 0;
}

}  // namespace

std::string decode_image(const uint8_t* data, size_t size, int channels, DecodedImage* out) {
  if (starts_with(data, size, "\x89PNG\r\n\x1a\n", 8)) return decode_png(data, size, channels, out);
  if (starts_with(data, size, "\xff\xd8\xff", 3)) return decode_jpeg(data, size, channels, out);
  if (starts_with(data, size, "P5", 2) || starts_with(data, size, "P6", 2)) return decode_pnm(data, size, channels, out);
  return "unknown image format; PNG, JPEG, PGM (P5) and PPM (P6) are read";
}

}  // namespace cli
}  // namespace minnow
