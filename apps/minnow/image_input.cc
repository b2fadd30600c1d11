#include "image_input.h"

#include "image_decode.h"

#include <minnow/model_builder.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

namespace minnow {
namespace cli {

bool is_image_path(const std::string& path) {
  std::string ext = path.substr(path.find_last_of('.') == std::string::npos ? path.size() : path.find_last_of('.'));
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".tga" || ext == ".gif" ||
         ext == ".ppm" || ext == ".pgm" || ext == ".pnm";  // BMP/TGA/GIF: named in the error
}

std::vector<float> resize_bilinear(const uint8_t* src, int w, int h, int c, int ow, int oh) {
  std::vector<float> out(size_t(ow) * oh * c);
  const float sx = float(w) / ow, sy = float(h) / oh;
  for (int y = 0; y < oh; ++y) {
    float fy = std::max(0.f, (y + 0.5f) * sy - 0.5f);
    int y0 = std::min(int(fy), h - 1), y1 = std::min(y0 + 1, h - 1);
    float wy = fy - y0;
    for (int x = 0; x < ow; ++x) {
      float fx = std::max(0.f, (x + 0.5f) * sx - 0.5f);
      int x0 = std::min(int(fx), w - 1), x1 = std::min(x0 + 1, w - 1);
      float wx = fx - x0;
      for (int k = 0; k < c; ++k) {
        auto p = [&](int yy, int xx) { return float(src[(size_t(yy) * w + xx) * c + k]); };
        float top = p(y0, x0) * (1 - wx) + p(y0, x1) * wx;
        float bot = p(y1, x0) * (1 - wx) + p(y1, x1) * wx;
        out[(size_t(y) * ow + x) * c + k] = top * (1 - wy) + bot * wy;
      }
    }
  }
  return out;
}

Result<Tensor> decode_image_tensor(const uint8_t* data, size_t size, const std::string& path, const Shape& shape,
                                  const ImageOptions& opt) {
  if (shape.size() != 4) return invalid_argument(path + ": an image can feed only a rank-4 input (N,C,H,W or N,H,W,C), this one has shape " + shape_to_string(shape));
  const int64_t c_dim = opt.nhwc ? shape[3] : shape[1];
  const int64_t h_dim = opt.nhwc ? shape[1] : shape[2], w_dim = opt.nhwc ? shape[2] : shape[3];
  int channels = c_dim > 0 ? int(c_dim) : 3;
  if (channels != 1 && channels != 3) return invalid_argument(path + ": the input takes " + std::to_string(channels) + " channels; images give 1 or 3");
  DecodedImage img;
  const std::string why = decode_image(data, size, channels, &img);
  if (!why.empty()) return invalid_argument(path + ": cannot decode image: " + why);
  const int w = img.width, h = img.height;
  int ow = opt.width ? opt.width : (w_dim > 0 ? int(w_dim) : w);
  int oh = opt.height ? opt.height : (h_dim > 0 ? int(h_dim) : h);
  if ((w_dim > 0 && ow != w_dim) || (h_dim > 0 && oh != h_dim))
    return invalid_argument(path + ": --resize " + std::to_string(ow) + "x" + std::to_string(oh) + " does not match the input's " + std::to_string(w_dim) + "x" + std::to_string(h_dim));
  if (ow <= 0 || oh <= 0 || int64_t(ow) * oh > (int64_t(1) << 28)) return invalid_argument(path + ": bad target size");
  std::vector<float> px = resize_bilinear(img.pixels.data(), w, h, channels, ow, oh);
  auto pick = [&](const std::vector<float>& v, int k) { return v.size() == 1 ? v[0] : v[size_t(k)]; };
  for (const auto* v : {&opt.mean, &opt.std})
    if (v->size() != 1 && v->size() != size_t(channels))
      return invalid_argument(path + ": --mean/--std need 1 or " + std::to_string(channels) + " values");
  Shape out_shape = opt.nhwc ? Shape{1, oh, ow, channels} : Shape{1, channels, oh, ow};
  Tensor t(DataType::kFloat32, out_shape);
  float* dst = t.data<float>();
  for (int y = 0; y < oh; ++y)
    for (int x = 0; x < ow; ++x)
      for (int k = 0; k < channels; ++k) {
        int src_k = (opt.bgr && channels == 3) ? 2 - k : k;  // channel k of the tensor
        float u = px[(size_t(y) * ow + x) * channels + src_k];
        float v = (u / opt.scale - pick(opt.mean, k)) / pick(opt.std, k);
        size_t idx = opt.nhwc ? (size_t(y) * ow + x) * channels + k : (size_t(k) * oh + y) * ow + x;
        dst[idx] = v;
      }
  return t;
}

Result<Tensor> read_image_tensor(const std::string& path, const Shape& shape, const ImageOptions& opt) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);  // before reading any of it
  if (!ec && size > uintmax_t(kMaxImageFileBytes))
    return invalid_argument(path + ": image file of " + std::to_string(size) + " bytes is larger than the " +
                            std::to_string(kMaxImageFileBytes) + " read");
  auto bytes = read_file(path);
  if (!bytes) return bytes.status();
  return decode_image_tensor(bytes.value().data(), bytes.value().size(), path, shape, opt);
}

}  // namespace cli
}  // namespace minnow
