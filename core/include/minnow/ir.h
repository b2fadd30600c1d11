// The in-memory form of a model: what the file holds, as plain C++ values. The builder
// writes it, the loader produces it (after verification), transforms and frontends edit
// it. Constant data stays where it is (mmapped file or owned bytes) through Blob.
#pragma once

#include <minnow/export.h>

#include <minnow/status.h>
#include <minnow/types.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace minnow {
namespace ir {

struct Dim {
  int64_t value = -1;  // -1: symbolic / unknown
  std::string symbol;  // e.g. "N"
};

struct QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int axis = -1;
  int bits = 8;
  bool symmetric = false;
  bool empty() const { return scale.empty(); }
};

// Bytes of one buffer; `owner` keeps the memory (a mapping or a vector) alive.
struct MINNOW_API Blob {
  std::shared_ptr<const void> owner;
  const uint8_t* data = nullptr;
  size_t size = 0;
  static Blob copy_of(const void* data, size_t size);
};

// Encoding stages (see schema/minnow.fbs): outermost first; buffers index ModelIR::buffers.
struct DenseStage {
  uint32_t buffer = 0;
  DataType element_type = DataType::kFloat32;
};
enum class SparseFormat { kCSR = 0, kBSR = 1 };
enum class SparseIndex { kExplicit = 0, kRelative = 1 };
struct SparseStage {
  SparseFormat format = SparseFormat::kCSR;
  int64_t rows = 0, cols = 0;
  int32_t block_rows = 1, block_cols = 1;
  uint32_t row_ptr = 0, col_idx = 0;  // buffers of int32 (kExplicit)
  int64_t nnz = 0;
  // kRelative: gap symbols (schema SparseIndexFormat), packed or Huffman coded.
  SparseIndex index = SparseIndex::kExplicit;
  int32_t index_bits = 0;
  int64_t index_count = 0;
  uint32_t index_buffer = 0;
  std::vector<uint8_t> index_code_lengths;  // non-empty: index_buffer is a Huffman bitstream
  uint64_t index_bit_length = 0;
};
struct CodebookStage {
  std::vector<float> centroids;
  int32_t bits = 0;
  uint32_t indices = 0;
  int64_t count = 0;
};
struct HuffmanStage {
  std::vector<uint8_t> code_lengths;
  uint32_t bitstream = 0;
  int64_t count = 0;
  uint64_t bit_length = 0;
};
using EncodingStage = std::variant<DenseStage, SparseStage, CodebookStage, HuffmanStage>;

struct MINNOW_API TensorInfo {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<Dim> shape;
  bool has_shape = true;                // false: rank unknown until inference
  std::vector<EncodingStage> encodings; // non-empty: a constant
  QuantParams quant;
  bool is_constant() const { return !encodings.empty(); }
  // Static shape with -1 for unknown dims.
  Shape static_shape() const;
};

enum class AttrType { kUndefined = 0, kInt = 1, kFloat = 2, kString = 3, kInts = 4,
                      kFloats = 5, kStrings = 6, kTensor = 7 };

struct MINNOW_API Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  int64_t i = 0;
  float f = 0.f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  int32_t tensor = -1;

  static Attribute Int(std::string n, int64_t v);
  static Attribute Float(std::string n, float v);
  static Attribute String(std::string n, std::string v);
  static Attribute Ints(std::string n, std::vector<int64_t> v);
  static Attribute Floats(std::string n, std::vector<float> v);
  static Attribute Strings(std::string n, std::vector<std::string> v);
  static Attribute TensorRef(std::string n, int32_t tensor_index);
};

struct MINNOW_API Node {
  std::string name;
  std::string domain;  // "" = ONNX default domain
  std::string op;
  int32_t op_version = 1;
  std::vector<int32_t> inputs;  // -1: optional input left out
  std::vector<int32_t> outputs;
  std::vector<Attribute> attributes;
  const Attribute* attr(const std::string& n) const;
  // "Conv 'conv1'" for messages.
  std::string describe() const;
};

struct MINNOW_API Graph {
  std::string name;
  std::vector<TensorInfo> tensors;
  std::vector<Node> nodes;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  int find_tensor(const std::string& name) const;  // -1 if absent
};

struct CompressionRecord {
  std::string plugin, plugin_version, parameters;
  uint64_t size_before = 0, size_after = 0;
  std::string metric;
  float metric_before = NAN, metric_after = NAN;
  std::string timestamp;
};

struct OpsetImport {
  std::string domain;
  int32_t version = 0;
};

struct ModelIR {
  uint32_t format_major = 1, format_minor = 0;
  std::string producer;
  Graph graph;
  std::vector<Blob> buffers;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<CompressionRecord> compression_log;
  std::vector<OpsetImport> opsets;
  // Write the model description (the flatbuffer) deflate-compressed (format 1.3, the
  // "MNWZ" layout of docs/ARCHITECTURE.md), when that makes the file smaller. Set by the
  // entropy-coding transform (huffman) and kept by a parse of such a file; the data
  // section is the same either way.
  bool compact = false;
};

}  // namespace ir

// Current format version written by this build. Readers accept equal major, any minor.
constexpr uint32_t kFormatMajor = 1;
constexpr uint32_t kFormatMinor = 3;  // 1.1: relative sparse indices; 1.2: Tensor.dims;
                                      // 1.3: the compact (deflated description) layout

// Serialise to the file layout of docs/ARCHITECTURE.md (size-prefixed flatbuffer, data
// section of 64-byte aligned buffers; with `model.compact`, the flatbuffer deflated).
// Checks the IR as the loader would. `deflate_level` (1-9) is zlib's level for the compact
// layout; a writer that records the file's own size in it may need another level to find
// a size that is its own fixed point (see plugins/compress_common/transform_plugin.cc).
MINNOW_API Result<std::vector<uint8_t>> serialize_model(const ir::ModelIR& model, int deflate_level = 9);

// Parse and verify bytes (FlatBuffers verifier + our checks). `owner` keeps `data`
// alive for zero-copy buffers (may be null: buffers are then copied). `origin` names the
// file in messages.
MINNOW_API Result<ir::ModelIR> parse_model(const uint8_t* data, size_t size,
                                std::shared_ptr<const void> owner, const std::string& origin);

}  // namespace minnow
