// Image data for calibration, distillation and evaluation: idx files (MNIST format,
// plain or gzipped, as Debian's dataset-fashion-mnist ships them) or raw float32 with a
// given shape, preprocessed as x = (u / 255 - mean) / std in float32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace minnow {
namespace compress {

struct Images {
  int64_t count = 0;
  std::vector<int64_t> sample_shape;  // e.g. {28, 28}
  std::vector<float> data;            // count * prod(sample_shape)
  int64_t sample_size() const;
};

// Whole file, un-gzipped when it starts with the gzip magic. Throws naming the file.
std::vector<uint8_t> read_maybe_gz(const std::string& path);

// idx3 images (uint8) preprocessed with mean/std; or, when `raw_shape` is given
// ("1000x1x28x28" or "1x1x28x28": batch first, the count comes from the file size), raw
// little-endian float32 used as is. A file that starts with the idx3 magic is read as idx
// either way (a raw float32 image file would have to begin with the float 4.0e-37), so
// one shape can serve raw calibration images next to idx evaluation images.
Images load_images(const std::string& path, float mean, float stddev, const std::string& raw_shape = "");
std::vector<int32_t> load_labels(const std::string& path);

}  // namespace compress
}  // namespace minnow
