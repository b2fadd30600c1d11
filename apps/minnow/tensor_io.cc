#include "tensor_io.h"

#include <minnow/model_builder.h>

#include <cstring>

#include <zlib.h>
#include <limits>

namespace minnow {
namespace cli {

namespace {

// Minimal protobuf wire-format reader with bounds checks.
class Wire {
 public:
  Wire(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  bool done() const { return p_ >= end_; }
  bool varint(uint64_t* v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return false;
      uint8_t b = *p_++;
      r |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *v = r;
        return true;
      }
    }
    return false;
  }
  bool bytes(const uint8_t** data, size_t* len) {
    uint64_t n;
    if (!varint(&n) || n > size_t(end_ - p_)) return false;
    *data = p_;
    *len = static_cast<size_t>(n);
    p_ += n;
    return true;
  }
  bool fixed(size_t n, const uint8_t** data) {
    if (size_t(end_ - p_) < n) return false;
    *data = p_;
    p_ += n;
    return true;
  }
  bool skip(uint32_t wire_type) {
    uint64_t v;
    const uint8_t* d;
    size_t l;
    switch (wire_type) {
      case 0: return varint(&v);
      case 1: return fixed(8, &d);
      case 2: return bytes(&d, &l);
      case 5: return fixed(4, &d);
      default: return false;
    }
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// ONNX TensorProto.DataType -> ours.
bool onnx_dtype(int64_t t, DataType* out) {
  switch (t) {
    case 1: *out = DataType::kFloat32; return true;
    case 2: *out = DataType::kUInt8; return true;
    case 3: *out = DataType::kInt8; return true;
    case 4: *out = DataType::kUInt16; return true;
    case 5: *out = DataType::kInt16; return true;
    case 6: *out = DataType::kInt32; return true;
    case 7: *out = DataType::kInt64; return true;
    case 9: *out = DataType::kBool; return true;
    case 10: *out = DataType::kFloat16; return true;
    case 11: *out = DataType::kFloat64; return true;
    case 12: *out = DataType::kUInt32; return true;
    case 13: *out = DataType::kUInt64; return true;
    default: return false;
  }
}

int onnx_code(DataType t) {
  switch (t) {
    case DataType::kFloat32: return 1;
    case DataType::kUInt8: return 2;
    case DataType::kInt8: return 3;
    case DataType::kUInt16: return 4;
    case DataType::kInt16: return 5;
    case DataType::kInt32: return 6;
    case DataType::kInt64: return 7;
    case DataType::kBool: return 9;
    case DataType::kFloat16: return 10;
    case DataType::kFloat64: return 11;
    case DataType::kUInt32: return 12;
    case DataType::kUInt64: return 13;
    default: return 0;
  }
}

void put_varint(std::vector<uint8_t>& o, uint64_t v) {
  while (v >= 0x80) {
    o.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  o.push_back(static_cast<uint8_t>(v));
}

}  // namespace

Result<Tensor> parse_tensor_proto(const uint8_t* data, size_t size, const std::string& origin,
                                  std::string* name) {
  Wire w(data, size);
  Shape dims;
  int64_t dtype_code = 0;
  const uint8_t* raw = nullptr;
  size_t raw_len = 0;
  std::vector<float> floats;
  std::vector<int64_t> ints;    // int32_data / int64_data
  std::vector<double> doubles;
  auto bad = [&](const std::string& why) { return invalid_argument(origin + ": not a valid TensorProto (" + why + ")"); };
  while (!w.done()) {
    uint64_t key;
    if (!w.varint(&key)) return bad("truncated field key");
    uint32_t field = static_cast<uint32_t>(key >> 3), wt = key & 7;
    auto packed_or_single = [&](auto&& on_value, uint32_t elem_wt) -> bool {
      if (wt == 2) {
        const uint8_t* d;
        size_t l;
        if (!w.bytes(&d, &l)) return false;
        Wire inner(d, l);
        while (!inner.done()) {
          if (elem_wt == 0) {
            uint64_t v;
            if (!inner.varint(&v)) return false;
            on_value(v, nullptr);
          } else {
            const uint8_t* f;
            if (!inner.fixed(elem_wt == 5 ? 4 : 8, &f)) return false;
            on_value(0, f);
          }
        }
        return true;
      }
      if (wt != elem_wt) return false;
      if (elem_wt == 0) {
        uint64_t v;
        if (!w.varint(&v)) return false;
        on_value(v, nullptr);
        return true;
      }
      const uint8_t* f;
      if (!w.fixed(elem_wt == 5 ? 4 : 8, &f)) return false;
      on_value(0, f);
      return true;
    };
    bool ok = true;
    switch (field) {
      case 1: ok = packed_or_single([&](uint64_t v, const uint8_t*) { dims.push_back(static_cast<int64_t>(v)); }, 0); break;
      case 2: ok = wt == 0 && w.varint(reinterpret_cast<uint64_t*>(&dtype_code)); break;
      case 4: ok = packed_or_single([&](uint64_t, const uint8_t* f) { float x; std::memcpy(&x, f, 4); floats.push_back(x); }, 5); break;
      case 5: ok = packed_or_single([&](uint64_t v, const uint8_t*) { ints.push_back(static_cast<int32_t>(v)); }, 0); break;
      case 7: ok = packed_or_single([&](uint64_t v, const uint8_t*) { ints.push_back(static_cast<int64_t>(v)); }, 0); break;
      case 10: ok = packed_or_single([&](uint64_t, const uint8_t* f) { double x; std::memcpy(&x, f, 8); doubles.push_back(x); }, 1); break;
      case 8: {
        const uint8_t* d;
        size_t l;
        ok = wt == 2 && w.bytes(&d, &l);
        if (ok && name) name->assign(reinterpret_cast<const char*>(d), l);
        break;
      }
      case 9: ok = wt == 2 && w.bytes(&raw, &raw_len); break;
      default: ok = w.skip(wt); break;
    }
    if (!ok) return bad("malformed field " + std::to_string(field));
  }
  DataType dt;
  if (!onnx_dtype(dtype_code, &dt)) return bad("unsupported data type " + std::to_string(dtype_code));
  if (dims.size() > MN_MAX_RANK) return bad("rank above 8");
  for (int64_t d : dims)
    if (d < 0) return bad("negative dimension");
  int64_t n = shape_elements(dims);
  if (n < 0 || uint64_t(n) > (uint64_t(1) << 34)) return bad("too many elements");
  size_t es = dtype_size(dt);
  DataType store = dt == DataType::kFloat16 ? DataType::kFloat32 : dt;
  // The values present must match the shape before the tensor is allocated: a few bytes
  // can declare a shape of gigabytes (found by tests/fuzz, fuzz_tensor_pb).
  if (raw && raw_len != size_t(n) * es)
    return bad("raw_data has " + std::to_string(raw_len) + " bytes, shape needs " + std::to_string(size_t(n) * es));
  if (!raw) {
    size_t have = dt == DataType::kFloat32 ? floats.size() : dt == DataType::kFloat64 ? doubles.size() : ints.size();
    if (have != size_t(n)) return bad("holds " + std::to_string(have) + " values, shape needs " + std::to_string(n));
  }
  Tensor t(store, dims);
  if (raw) {
    if (dt == DataType::kFloat16) {
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, raw + 2 * i, 2);
        t.data<float>()[i] = half_to_float(h);
      }
    } else if (n) {
      std::memcpy(t.raw(), raw, raw_len);
    }
    return t;
  }
  auto need = [&](size_t have) -> Status {
    if (have != size_t(n)) return bad("holds " + std::to_string(have) + " values, shape needs " + std::to_string(n));
    return Status::ok();
  };
  switch (dt) {
    case DataType::kFloat32:
      MINNOW_RETURN_IF_ERROR(need(floats.size()));
      std::copy(floats.begin(), floats.end(), t.data<float>());
      break;
    case DataType::kFloat64:
      MINNOW_RETURN_IF_ERROR(need(doubles.size()));
      std::copy(doubles.begin(), doubles.end(), t.data<double>());
      break;
    case DataType::kInt64:
      MINNOW_RETURN_IF_ERROR(need(ints.size()));
      std::copy(ints.begin(), ints.end(), t.data<int64_t>());
      break;
    case DataType::kInt32:
      MINNOW_RETURN_IF_ERROR(need(ints.size()));
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(ints[i]);
      break;
    case DataType::kUInt8: case DataType::kInt8: case DataType::kBool:
      MINNOW_RETURN_IF_ERROR(need(ints.size()));
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(ints[i]);
      break;
    default:
      return bad(std::string("typed fields of ") + dtype_name(dt) + " are not supported");
  }
  return t;
}

std::vector<uint8_t> write_tensor_proto(const Tensor& t, const std::string& name) {
  std::vector<uint8_t> o;
  for (int64_t d : t.shape()) {
    o.push_back(1 << 3 | 0);
    put_varint(o, static_cast<uint64_t>(d));
  }
  o.push_back(2 << 3 | 0);
  put_varint(o, static_cast<uint64_t>(onnx_code(t.dtype())));
  o.push_back(8 << 3 | 2);
  put_varint(o, name.size());
  o.insert(o.end(), name.begin(), name.end());
  o.push_back(9 << 3 | 2);
  put_varint(o, t.bytes());
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  o.insert(o.end(), p, p + t.bytes());
  return o;
}

Result<Tensor> parse_npy(const uint8_t* data, size_t size, const std::string& origin) {
  auto bad = [&](const std::string& why) { return invalid_argument(origin + ": not a valid .npy file (" + why + ")"); };
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0) return bad("missing magic");
  uint8_t major = data[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = data[8] | (size_t(data[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return bad("truncated header");
    hlen = data[8] | (size_t(data[9]) << 8) | (size_t(data[10]) << 16) | (size_t(data[11]) << 24);
    hstart = 12;
  } else {
    return bad("unknown version");
  }
  if (hlen > size - hstart) return bad("truncated header");
  std::string h(reinterpret_cast<const char*>(data + hstart), hlen);
  auto field = [&](const std::string& key) -> std::string {
    size_t k = h.find("'" + key + "'");
    if (k == std::string::npos) return "";
    size_t c = h.find(':', k);
    if (c == std::string::npos) return "";
    size_t s = h.find_first_not_of(" ", c + 1);
    if (s == std::string::npos) return "";
    if (h[s] == '\'') {
      size_t e = h.find('\'', s + 1);
      return e == std::string::npos ? "" : h.substr(s + 1, e - s - 1);
    }
    if (h[s] == '(') {
      size_t e = h.find(')', s);
      return e == std::string::npos ? "" : h.substr(s, e - s + 1);
    }
    size_t e = h.find_first_of(",}", s);
    return h.substr(s, e == std::string::npos ? std::string::npos : e - s);
  };
  std::string descr = field("descr"), fortran = field("fortran_order"), shape_s = field("shape");
  if (fortran.find("True") != std::string::npos) return bad("Fortran order is not supported");
  DataType dt;
  if (descr == "<f4") dt = DataType::kFloat32;
  else if (descr == "<f8") dt = DataType::kFloat64;
  else if (descr == "<i8") dt = DataType::kInt64;
  else if (descr == "<i4") dt = DataType::kInt32;
  else if (descr == "|u1") dt = DataType::kUInt8;
  else if (descr == "|i1") dt = DataType::kInt8;
  else if (descr == "|b1") dt = DataType::kBool;
  else return bad("unsupported dtype '" + descr + "'");
  if (shape_s.size() < 2) return bad("missing shape");
  Shape shape;
  std::string inner = shape_s.substr(1, shape_s.size() - 2);
  size_t pos = 0;
  while (pos < inner.size()) {
    size_t e = inner.find(',', pos);
    std::string tok = inner.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    tok.erase(0, tok.find_first_not_of(' '));
    if (!tok.empty()) {
      char* end = nullptr;
      long long v = std::strtoll(tok.c_str(), &end, 10);
      if (v < 0 || (end && *end && *end != ' ')) return bad("bad shape");
      shape.push_back(v);
    }
    if (e == std::string::npos) break;
    pos = e + 1;
  }
  if (shape.size() > MN_MAX_RANK) return bad("rank above 8");
  int64_t n = shape_elements(shape);
  if (n < 0 || uint64_t(n) > (uint64_t(1) << 34)) return bad("too many elements");
  size_t need = size_t(n) * dtype_size(dt), start = hstart + hlen;
  if (size - start != need) return bad("data has " + std::to_string(size - start) + " bytes, shape needs " + std::to_string(need));
  Tensor t(dt, shape);
  if (need) std::memcpy(t.raw(), data + start, need);
  return t;
}

std::vector<uint8_t> write_npy(const Tensor& t) {
  std::string descr = t.dtype() == DataType::kFloat32 ? "<f4" : t.dtype() == DataType::kInt64 ? "<i8"
                    : t.dtype() == DataType::kInt32 ? "<i4" : t.dtype() == DataType::kFloat64 ? "<f8"
                    : t.dtype() == DataType::kBool ? "|b1" : t.dtype() == DataType::kInt8 ? "|i1" : "|u1";
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 || i + 1 < t.shape().size() ? "," : "");
  shape += ")";
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::vector<uint8_t> o = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(h.size() & 0xff), static_cast<uint8_t>(h.size() >> 8)};
  o.insert(o.end(), h.begin(), h.end());
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  o.insert(o.end(), p, p + t.bytes());
  return o;
}

Result<std::vector<uint8_t>> read_maybe_gzip(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes || bytes.value().size() < 2 || bytes.value()[0] != 0x1f || bytes.value()[1] != 0x8b) return bytes;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return io_error("cannot open '" + path + "'");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    out.insert(out.end(), buf, buf + n);
    if (out.size() > (size_t(1) << 32)) {
      gzclose(f);
      return invalid_argument(path + ": decompresses to more than 4 GiB");
    }
  }
  int err = 0;
  const char* msg = gzerror(f, &err);
  bool bad = n < 0 || (err != Z_OK && err != Z_STREAM_END);
  std::string why = bad && msg ? msg : "";
  gzclose(f);
  if (bad) return invalid_argument(path + ": corrupt gzip data (" + why + ")");
  return out;
}

namespace {
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
}  // namespace

Result<IdxImages> parse_idx_images(const uint8_t* data, size_t size, const std::string& origin) {
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return invalid_argument(origin + ": gzip-compressed; gunzip it first");
  if (size < 16 || be32(data) != 0x00000803) return invalid_argument(origin + ": not an idx3 image file (magic 0x00000803)");
  IdxImages im;
  im.count = be32(data + 4);
  im.rows = be32(data + 8);
  im.cols = be32(data + 12);
  uint64_t need = uint64_t(im.count) * uint64_t(im.rows) * uint64_t(im.cols);
  if (im.rows == 0 || im.cols == 0 || need != size - 16)
    return invalid_argument(origin + ": header says " + std::to_string(im.count) + " images of " + std::to_string(im.rows) + "x" + std::to_string(im.cols) + ", file has " + std::to_string(size - 16) + " pixel bytes");
  im.pixels.assign(data + 16, data + size);
  return im;
}

Result<std::vector<uint8_t>> parse_idx_labels(const uint8_t* data, size_t size, const std::string& origin) {
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return invalid_argument(origin + ": gzip-compressed; gunzip it first");
  if (size < 8 || be32(data) != 0x00000801) return invalid_argument(origin + ": not an idx1 label file (magic 0x00000801)");
  uint64_t n = be32(data + 4);
  if (n != size - 8) return invalid_argument(origin + ": header says " + std::to_string(n) + " labels, file has " + std::to_string(size - 8));
  return std::vector<uint8_t>(data + 8, data + size);
}

Result<Tensor> read_tensor_file(const std::string& path, const Shape& shape_for_raw) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.status();
  const auto& b = bytes.value();
  auto ends_with = [&](const char* s) {
    size_t n = std::strlen(s);
    return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
  };
  if (ends_with(".npy")) return parse_npy(b.data(), b.size(), path);
  if (ends_with(".pb")) return parse_tensor_proto(b.data(), b.size(), path);
  if (ends_with(".bin") || ends_with(".raw")) {
    int64_t n = shape_elements(shape_for_raw);
    if (shape_for_raw.empty() || n < 0) return invalid_argument(path + ": raw float32 input needs a known input shape");
    if (b.size() != size_t(n) * 4)
      return invalid_argument(path + ": has " + std::to_string(b.size()) + " bytes, input shape " + shape_to_string(shape_for_raw) + " needs " + std::to_string(n * 4));
    Tensor t(DataType::kFloat32, shape_for_raw);
    std::memcpy(t.raw(), b.data(), b.size());
    return t;
  }
  return invalid_argument(path + ": unknown tensor file type (use .pb, .npy or .bin)");
}

}  // namespace cli
}  // namespace minnow
