// Reads a binary .caffemodel (a serialized NetParameter) with a hand-written protobuf
// wire-format reader: only layer names, types and their blobs are taken, everything else
// is skipped by wire type. Both the current `layer` (field 100) and the V1 `layers`
// (field 2) forms are read. Every length is checked against the bytes left, so a truncated
// or corrupt file is an error naming the file and byte offset, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace minnow {
namespace caffe {

struct CaffeBlob {
  std::vector<int64_t> shape;  // from BlobShape, or the legacy num/channels/height/width
  std::vector<float> data;     // float data, or double_data converted
};

struct LayerWeights {
  std::string type;  // as stored (V1 enum names are mapped to the new type names)
  std::vector<CaffeBlob> blobs;
};

// Layer name -> its blobs. Layers without blobs are kept too (their type is useful in
// messages). When a name occurs twice, the first occurrence that has blobs wins.
using WeightMap = std::map<std::string, LayerWeights>;

WeightMap parse_caffemodel(const uint8_t* data, size_t size, const std::string& origin);

// The new-style type name of a V1LayerParameter.LayerType enum value ("" if unknown).
std::string v1_type_name(int value);
// Same, from the enum identifier used in V1 prototxts ("CONVOLUTION" -> "Convolution").
std::string v1_type_name(const std::string& identifier);

}  // namespace caffe
}  // namespace minnow
