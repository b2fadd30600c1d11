// A tiny protobuf wire-format writer for building .caffemodel bytes in tests (layers with
// blobs, in the current and the V1 form), independent of the reader under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace minnow {
namespace caffe_test {

struct Wire {
  std::vector<uint8_t> b;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      b.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    b.push_back(static_cast<uint8_t>(v));
  }
  void tag(uint32_t field, int wire) { varint((uint64_t(field) << 3) | uint32_t(wire)); }
  void bytes(uint32_t field, const std::vector<uint8_t>& payload) {
    tag(field, 2);
    varint(payload.size());
    b.insert(b.end(), payload.begin(), payload.end());
  }
  void str(uint32_t field, const std::string& s) { bytes(field, std::vector<uint8_t>(s.begin(), s.end())); }
  void int_field(uint32_t field, uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  void packed_floats(uint32_t field, const std::vector<float>& v) {
    std::vector<uint8_t> p(v.size() * 4);
    if (!v.empty()) std::memcpy(p.data(), v.data(), p.size());
    bytes(field, p);
  }
  void unpacked_floats(uint32_t field, const std::vector<float>& v) {
    for (float f : v) {
      tag(field, 5);
      uint8_t q[4];
      std::memcpy(q, &f, 4);
      b.insert(b.end(), q, q + 4);
    }
  }
};

// BlobProto with a BlobShape (or the legacy num/channels/height/width when `legacy`).
inline std::vector<uint8_t> blob(const std::vector<int64_t>& shape, const std::vector<float>& data, bool legacy = false,
                                 bool packed = true) {
  Wire w;
  if (legacy) {
    int64_t d[4] = {1, 1, 1, 1};
    for (size_t i = 0; i < shape.size() && i < 4; ++i) d[4 - shape.size() + i] = shape[i];
    for (int i = 0; i < 4; ++i) w.int_field(static_cast<uint32_t>(i + 1), static_cast<uint64_t>(d[i]));
  } else {
    Wire s;
    Wire dims;
    for (int64_t d : shape) dims.varint(static_cast<uint64_t>(d));
    s.bytes(1, dims.b);
    w.bytes(7, s.b);
  }
  if (packed) w.packed_floats(5, data);
  else w.unpacked_floats(5, data);
  return w.b;
}

struct LayerBlobs {
  std::string name, type;
  std::vector<std::vector<uint8_t>> blobs;
};

// NetParameter with `layer` (field 100) entries, or V1 `layers` (field 2, enum type).
inline std::vector<uint8_t> caffemodel(const std::vector<LayerBlobs>& layers, bool v1 = false, int v1_type = 4) {
  Wire net;
  net.str(1, "test_net");
  for (const auto& l : layers) {
    Wire lw;
    if (v1) {
      lw.str(4, l.name);
      lw.int_field(5, static_cast<uint64_t>(v1_type));
      for (const auto& bl : l.blobs) lw.bytes(6, bl);
    } else {
      lw.str(1, l.name);
      lw.str(2, l.type);
      lw.str(3, "bottom_is_ignored");
      for (const auto& bl : l.blobs) lw.bytes(7, bl);
    }
    net.bytes(v1 ? 2 : 100, lw.b);
  }
  return net.b;
}

}  // namespace caffe_test
}  // namespace minnow
