// ONNX TensorProto <-> minnow::Tensor, header-only so the conformance runner (which also
// links protobuf) reads test tensors exactly as the frontend reads initializers.
// float16, bfloat16 and double become float32: the engine computes in float32.
#pragma once

#include <minnow/status.h>
#include <minnow/types.h>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

namespace minnow {
namespace onnx_frontend {

inline float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, f;
  if (exp == 0) {
    if (mant == 0) {
      f = sign << 31;
    } else {
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) { mant <<= 1; --exp; }
      mant &= 0x3ff;
      f = (sign << 31) | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    f = (sign << 31) | 0x7f800000u | (mant << 13);
  } else {
    f = (sign << 31) | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}

inline float bf16_to_float(uint16_t h) {
  uint32_t f = static_cast<uint32_t>(h) << 16;
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}

inline const char* onnx_type_name(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return "float"; case onnx::TensorProto::UINT8: return "uint8";
    case onnx::TensorProto::INT8: return "int8"; case onnx::TensorProto::UINT16: return "uint16";
    case onnx::TensorProto::INT16: return "int16"; case onnx::TensorProto::INT32: return "int32";
    case onnx::TensorProto::INT64: return "int64"; case onnx::TensorProto::STRING: return "string";
    case onnx::TensorProto::BOOL: return "bool"; case onnx::TensorProto::FLOAT16: return "float16";
    case onnx::TensorProto::DOUBLE: return "double"; case onnx::TensorProto::UINT32: return "uint32";
    case onnx::TensorProto::UINT64: return "uint64"; case onnx::TensorProto::COMPLEX64: return "complex64";
    case onnx::TensorProto::COMPLEX128: return "complex128"; case onnx::TensorProto::BFLOAT16: return "bfloat16";
    default: return "undefined";
  }
}

// The engine type an ONNX element type becomes; false if it has none. `converted` is set
// when values change representation (float16 / bfloat16 / double -> float32).
inline bool engine_dtype(int t, DataType* out, bool* converted = nullptr) {
  bool conv = false;
  switch (t) {
    case onnx::TensorProto::FLOAT: *out = DataType::kFloat32; break;
    case onnx::TensorProto::UINT8: *out = DataType::kUInt8; break;
    case onnx::TensorProto::INT8: *out = DataType::kInt8; break;
    case onnx::TensorProto::UINT16: *out = DataType::kUInt16; break;
    case onnx::TensorProto::INT16: *out = DataType::kInt16; break;
    case onnx::TensorProto::INT32: *out = DataType::kInt32; break;
    case onnx::TensorProto::INT64: *out = DataType::kInt64; break;
    case onnx::TensorProto::BOOL: *out = DataType::kBool; break;
    case onnx::TensorProto::UINT32: *out = DataType::kUInt32; break;
    case onnx::TensorProto::UINT64: *out = DataType::kUInt64; break;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16: case onnx::TensorProto::DOUBLE:
      *out = DataType::kFloat32;
      conv = true;
      break;
    default:
      return false;
  }
  if (converted) *converted = conv;
  return true;
}

// Reads a TensorProto (raw_data, typed fields, or external data relative to `base_dir`).
inline Result<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& base_dir = "") {
  const std::string what = "tensor '" + tp.name() + "'";
  DataType dt;
  if (!engine_dtype(tp.data_type(), &dt))
    return unsupported(what + ": element type " + onnx_type_name(tp.data_type()) + " is not supported");
  if (tp.has_segment()) return unsupported(what + ": segmented tensors are not supported");
  Shape shape(tp.dims().begin(), tp.dims().end());
  for (int64_t d : shape)
    if (d < 0) return invalid_argument(what + ": negative dimension");
  int64_t n = shape_elements(shape);
  if (n < 0) return invalid_argument(what + ": too many elements");
  const int t = tp.data_type();
  size_t src_es;
  switch (t) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32: case onnx::TensorProto::UINT32: src_es = 4; break;
    case onnx::TensorProto::INT64: case onnx::TensorProto::UINT64: case onnx::TensorProto::DOUBLE: src_es = 8; break;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16: case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16: src_es = 2; break;
    default: src_es = 1; break;
  }
  const size_t count = static_cast<size_t>(n);
  if (count > SIZE_MAX / 8) return invalid_argument(what + ": too many elements");
  // Raw little-endian bytes of the source type, from raw_data or an external file.
  std::string external;
  const std::string* raw = nullptr;
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : tp.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    }
    if (location.empty() || location.find("..") != std::string::npos)
      return invalid_argument(what + ": external data without a valid location");
    std::string file = base_dir.empty() ? location : base_dir + "/" + location;
    std::ifstream in(file, std::ios::binary);
    if (!in) return io_error(what + ": cannot open external data file '" + file + "'");
    in.seekg(offset);
    size_t want = length >= 0 ? static_cast<size_t>(length) : count * src_es;
    external.resize(want);
    in.read(&external[0], static_cast<std::streamsize>(want));
    if (static_cast<size_t>(in.gcount()) != want) return io_error(what + ": external data file '" + file + "' is too short");
    raw = &external;
  } else if (tp.has_raw_data()) {
    raw = &tp.raw_data();
  }
  auto fail_count = [&](size_t have) {
    return invalid_argument(what + ": holds " + std::to_string(have) + " values, shape " + shape_to_string(shape) + " needs " + std::to_string(count));
  };
  // The values present must match the shape before the tensor is allocated: a few bytes
  // of protobuf can declare a shape of terabytes.
  {
    size_t have;
    if (raw) have = raw->size() % src_es ? SIZE_MAX : raw->size() / src_es;
    else if (t == onnx::TensorProto::FLOAT) have = static_cast<size_t>(tp.float_data_size());
    else if (t == onnx::TensorProto::DOUBLE) have = static_cast<size_t>(tp.double_data_size());
    else if (t == onnx::TensorProto::INT64) have = static_cast<size_t>(tp.int64_data_size());
    else if (t == onnx::TensorProto::UINT32 || t == onnx::TensorProto::UINT64) have = static_cast<size_t>(tp.uint64_data_size());
    else have = static_cast<size_t>(tp.int32_data_size());
    if (have != count) return fail_count(have == SIZE_MAX ? raw->size() / src_es : have);
  }
  Tensor out(dt, shape);
  if (raw) {
    if (raw->size() != count * src_es) return fail_count(raw->size() / src_es);
    const char* p = raw->data();
    if (t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16) {
      float* o = out.data<float>();
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        o[i] = t == onnx::TensorProto::FLOAT16 ? half_to_float(h) : bf16_to_float(h);
      }
    } else if (t == onnx::TensorProto::DOUBLE) {
      float* o = out.data<float>();
      for (size_t i = 0; i < count; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        o[i] = static_cast<float>(d);
      }
    } else if (count) {
      std::memcpy(out.raw(), p, count * src_es);
    }
    return out;
  }
  switch (t) {
    case onnx::TensorProto::FLOAT:
      if (static_cast<size_t>(tp.float_data_size()) != count) return fail_count(tp.float_data_size());
      for (size_t i = 0; i < count; ++i) out.data<float>()[i] = tp.float_data(static_cast<int>(i));
      break;
    case onnx::TensorProto::DOUBLE:
      if (static_cast<size_t>(tp.double_data_size()) != count) return fail_count(tp.double_data_size());
      for (size_t i = 0; i < count; ++i) out.data<float>()[i] = static_cast<float>(tp.double_data(static_cast<int>(i)));
      break;
    case onnx::TensorProto::INT64:
      if (static_cast<size_t>(tp.int64_data_size()) != count) return fail_count(tp.int64_data_size());
      for (size_t i = 0; i < count; ++i) out.data<int64_t>()[i] = tp.int64_data(static_cast<int>(i));
      break;
    case onnx::TensorProto::UINT32: case onnx::TensorProto::UINT64:
      if (static_cast<size_t>(tp.uint64_data_size()) != count) return fail_count(tp.uint64_data_size());
      for (size_t i = 0; i < count; ++i) {
        uint64_t v = tp.uint64_data(static_cast<int>(i));
        if (t == onnx::TensorProto::UINT32) out.data<uint32_t>()[i] = static_cast<uint32_t>(v);
        else out.data<uint64_t>()[i] = v;
      }
      break;
    default: {  // int32_data holds int32, int16, int8, uint16, uint8, bool, float16, bfloat16
      if (static_cast<size_t>(tp.int32_data_size()) != count) return fail_count(tp.int32_data_size());
      for (size_t i = 0; i < count; ++i) {
        int32_t v = tp.int32_data(static_cast<int>(i));
        switch (t) {
          case onnx::TensorProto::INT32: out.data<int32_t>()[i] = v; break;
          case onnx::TensorProto::INT16: out.data<int16_t>()[i] = static_cast<int16_t>(v); break;
          case onnx::TensorProto::UINT16: out.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
          case onnx::TensorProto::INT8: out.data<int8_t>()[i] = static_cast<int8_t>(v); break;
          case onnx::TensorProto::UINT8: out.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
          case onnx::TensorProto::BOOL: out.data<uint8_t>()[i] = v != 0; break;
          case onnx::TensorProto::FLOAT16: out.data<float>()[i] = half_to_float(static_cast<uint16_t>(v)); break;
          case onnx::TensorProto::BFLOAT16: out.data<float>()[i] = bf16_to_float(static_cast<uint16_t>(v)); break;
          default: return unsupported(what + ": element type " + onnx_type_name(t));
        }
      }
    }
  }
  return out;
}

}  // namespace onnx_frontend
}  // namespace minnow
