#include "dataset.h"

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace minnow {
namespace compress {

int64_t Images::sample_size() const {
  int64_t n = 1;
  for (int64_t d : sample_shape) n *= d;
  return n;
}

std::vector<uint8_t> read_maybe_gz(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open '" + path + "'");
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, f);
  std::fclose(f);
  std::vector<uint8_t> out;
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) throw std::runtime_error("cannot open '" + path + "' as gzip");
    uint8_t buf[1 << 16];
    int n;
    while ((n = gzread(gz, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
    int errnum = 0;
    const char* msg = gzerror(gz, &errnum);
    gzclose(gz);
    if (n < 0 || errnum < 0) throw std::runtime_error("'" + path + "': gzip error: " + (msg ? msg : "?"));
    return out;
  }
  f = std::fopen(path.c_str(), "rb");
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

static uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

Images load_images(const std::string& path, float mean, float stddev, const std::string& raw_shape) {
  std::vector<uint8_t> bytes = read_maybe_gz(path);
  Images im;
  const bool idx = bytes.size() >= 16 && be32(bytes.data()) == 0x00000803;
  if (!raw_shape.empty() && !idx) {
    std::vector<int64_t> dims;
    std::stringstream ss(raw_shape);
    std::string part;
    while (std::getline(ss, part, 'x')) {
      char* end = nullptr;
      long long v = std::strtoll(part.c_str(), &end, 10);
      if (part.empty() || *end || v <= 0) throw std::runtime_error("bad shape '" + raw_shape + "'");
      dims.push_back(v);
    }
    if (dims.size() < 2) throw std::runtime_error("shape '" + raw_shape + "' needs a batch and a sample shape");
    im.sample_shape.assign(dims.begin() + 1, dims.end());
    const int64_t per = im.sample_size() * 4;
    if (bytes.size() % size_t(per)) throw std::runtime_error("'" + path + "': " + std::to_string(bytes.size()) +
                                                            " bytes is not a whole number of samples of shape " + raw_shape);
    im.count = int64_t(bytes.size()) / per;
    im.data.resize(bytes.size() / 4);
    std::memcpy(im.data.data(), bytes.data(), bytes.size());
    return im;
  }
  if (bytes.size() < 16 || be32(bytes.data()) != 0x00000803)
    throw std::runtime_error("'" + path + "' is not an idx3 image file (magic 0x00000803)");
  im.count = be32(bytes.data() + 4);
  im.sample_shape = {int64_t(be32(bytes.data() + 8)), int64_t(be32(bytes.data() + 12))};
  const uint64_t need = 16 + uint64_t(im.count) * uint64_t(im.sample_size());
  if (bytes.size() < need) throw std::runtime_error("'" + path + "' is truncated: " + std::to_string(bytes.size()) +
                                                    " bytes, header says " + std::to_string(need));
  if (stddev == 0) throw std::runtime_error("std must not be 0");
  im.data.resize(size_t(im.count * im.sample_size()));
  for (size_t i = 0; i < im.data.size(); ++i) im.data[i] = (float(bytes[16 + i]) / 255.0f - mean) / stddev;
  return im;
}

std::vector<int32_t> load_labels(const std::string& path) {
  std::vector<uint8_t> bytes = read_maybe_gz(path);
  if (bytes.size() < 8 || be32(bytes.data()) != 0x00000801)
    throw std::runtime_error("'" + path + "' is not an idx1 label file (magic 0x00000801)");
  uint32_t n = be32(bytes.data() + 4);
  if (bytes.size() < 8 + uint64_t(n)) throw std::runtime_error("'" + path + "' is truncated");
  return std::vector<int32_t>(bytes.begin() + 8, bytes.begin() + 8 + n);
}

}  // namespace compress
}  // namespace minnow
