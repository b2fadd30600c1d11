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

// By extension: .pb, .npy; .bin needs `shape` (raw float32).
Result<Tensor> read_tensor_file(const std::string& path, const Shape& shape_for_raw = {});

}  // namespace cli
}  // namespace minnow
