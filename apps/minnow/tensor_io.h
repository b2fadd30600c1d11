// Reading and writing tensors for the command line: ONNX TensorProto (.pb, parsed by hand
// so the command needs no protobuf), NumPy .npy, and raw little-endian float32 (.bin).
// Every reader checks sizes before it touches data: bad input is an error, not a crash.
#pragma once

#include <minnow/status.h>
#include <minnow/types.h>

#include <string>

namespace minnow {
namespace cli {

// Parses a serialized ONNX TensorProto.
Result<Tensor> parse_tensor_proto(const uint8_t* data, size_t size, const std::string& origin,
                                  std::string* name = nullptr);
Result<Tensor> parse_npy(const uint8_t* data, size_t size, const std::string& origin);
// Writes a TensorProto (float32/int64/...) with raw_data.
std::vector<uint8_t> write_tensor_proto(const Tensor& t, const std::string& name);
std::vector<uint8_t> write_npy(const Tensor& t);

// Reads a file, gunzipping it if it is gzip-compressed (Debian's datasets ship .gz).
Result<std::vector<uint8_t>> read_maybe_gzip(const std::string& path);

// idx files (MNIST / Fashion-MNIST): images `0x00000803 N rows cols` + uint8 pixels, labels
// `0x00000801 N` + uint8 labels.
struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;
};
Result<IdxImages> parse_idx_images(const uint8_t* data, size_t size, const std::string& origin);
Result<std::vector<uint8_t>> parse_idx_labels(const uint8_t* data, size_t size, const std::string& origin);

// By extension: .pb, .npy; .bin needs `shape` (raw float32).
Result<Tensor> read_tensor_file(const std::string& path, const Shape& shape_for_raw = {});

}  // namespace cli
}  // namespace minnow
