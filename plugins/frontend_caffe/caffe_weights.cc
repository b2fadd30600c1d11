// Protobuf wire-format reader for .caffemodel files (see caffe_weights.h). Field numbers
// are Caffe's public ones (caffe.proto):
//   NetParameter: layer 100 (LayerParameter), layers 2 (V1LayerParameter)
//   LayerParameter: name 1, type 2, blobs 7;  V1LayerParameter: name 4, type 5 (enum), blobs 6
//   BlobProto: num 1, channels 2, height 3, width 4, data 5 (packed float), shape 7,
//              double_data 8;  BlobShape: dim 1 (packed int64)
#include "caffe_weights.h"

#include "caffe_error.h"

#include <cstring>

namespace minnow {
namespace caffe {

namespace {

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

class Reader {
 public:
  Reader(const uint8_t* p, size_t n, size_t base, const std::string& origin, const char* what)
      : p_(p), end_(p + n), base_(base), begin_(p), origin_(origin), what_(what) {}

  bool done() const { return p_ >= end_; }
  size_t offset() const { return base_ + static_cast<size_t>(p_ - begin_); }

  [[noreturn]] void fail(const std::string& msg) const {
    throw CaffeError(origin_ + ": corrupt caffemodel at byte " + std::to_string(offset()) + " (in " + what_ +
                     "): " + msg);
  }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) fail("truncated varint");
      uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint longer than 10 bytes");
  }

  // Reads a tag; returns false at the end.
  bool tag(uint32_t* field, int* wire) {
    if (done()) return false;
    uint64_t t = varint();
    *field = static_cast<uint32_t>(t >> 3);
    *wire = static_cast<int>(t & 7);
    if (*field == 0) fail("field number 0");
    return true;
  }

  // A length-delimited payload as a sub-reader.
  Reader sub(const char* what) {
    uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) fail("length " + std::to_string(n) + " runs past the end of the data");
    Reader r(p_, static_cast<size_t>(n), offset(), origin_, what);
    p_ += n;
    return r;
  }

  std::string string() {
    Reader r = sub(what_);
    return std::string(reinterpret_cast<const char*>(r.p_), static_cast<size_t>(r.end_ - r.p_));
  }

  float fixed32_float() {
    if (end_ - p_ < 4) fail("truncated float");
    float f;
    std::memcpy(&f, p_, 4);  // wire format is little-endian, as is every host we build for
    p_ += 4;
    return f;
  }
  double fixed64_double() {
    if (end_ - p_ < 8) fail("truncated double");
    double d;
    std::memcpy(&d, p_, 8);
    p_ += 8;
    return d;
  }

  void skip(int wire, int depth = 0) {
    switch (wire) {
      case kVarint: varint(); break;
      case kFixed64: if (end_ - p_ < 8) fail("truncated fixed64"); p_ += 8; break;
      case kFixed32: if (end_ - p_ < 4) fail("truncated fixed32"); p_ += 4; break;
      case kLengthDelimited: sub(what_); break;
      case kStartGroup: {
        if (depth > 32) fail("groups nested too deep");
        uint32_t f; int w;
        while (true) {
          if (!tag(&f, &w)) fail("unterminated group");
          if (w == kEndGroup) break;
          skip(w, depth + 1);
        }
        break;
      }
      default: fail("invalid wire type " + std::to_string(wire));
    }
  }

  // Repeated float: packed (one length-delimited run) or one fixed32 per tag.
  void floats(int wire, std::vector<float>* out) {
    if (wire == kFixed32) {
      out->push_back(fixed32_float());
    } else if (wire == kLengthDelimited) {
      Reader r = sub(what_);
      size_t n = static_cast<size_t>(r.end_ - r.p_);
      if (n % 4) fail("packed float field of " + std::to_string(n) + " bytes (not a multiple of 4)");
      size_t old = out->size();
      out->resize(old + n / 4);
      if (n) std::memcpy(out->data() + old, r.p_, n);  // data() may be null when empty
    } else {
      fail("float field with wire type " + std::to_string(wire));
    }
  }
  void doubles(int wire, std::vector<float>* out) {
    if (wire == kFixed64) {
      out->push_back(static_cast<float>(fixed64_double()));
    } else if (wire == kLengthDelimited) {
      Reader r = sub(what_);
      if ((r.end_ - r.p_) % 8) fail("packed double field not a multiple of 8 bytes");
      while (!r.done()) out->push_back(static_cast<float>(r.fixed64_double()));
    } else {
      fail("double field with wire type " + std::to_string(wire));
    }
  }
  void varints(int wire, std::vector<int64_t>* out) {
    if (wire == kVarint) {
      out->push_back(static_cast<int64_t>(varint()));
    } else if (wire == kLengthDelimited) {
      Reader r = sub(what_);
      while (!r.done()) out->push_back(static_cast<int64_t>(r.varint()));
    } else {
      fail("integer field with wire type " + std::to_string(wire));
    }
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  size_t base_;
  const uint8_t* begin_;
  const std::string& origin_;
  const char* what_;
};

CaffeBlob read_blob(Reader r) {
  CaffeBlob b;
  int64_t legacy[4] = {0, 0, 0, 0};
  bool has_legacy = false, has_shape = false;
  uint32_t f;
  int w;
  while (r.tag(&f, &w)) {
    if (f >= 1 && f <= 4 && w == kVarint) {
      legacy[f - 1] = static_cast<int64_t>(r.varint());
      has_legacy = true;
    } else if (f == 5) {
      r.floats(w, &b.data);
    } else if (f == 8) {
      r.doubles(w, &b.data);
    } else if (f == 7 && w == kLengthDelimited) {
      Reader s = r.sub("BlobShape");
      has_shape = true;
      uint32_t sf;
      int sw;
      while (s.tag(&sf, &sw)) {
        if (sf == 1) s.varints(sw, &b.shape);
        else s.skip(sw);
      }
    } else {
      r.skip(w);
    }
  }
  if (!has_shape && has_legacy) b.shape.assign(legacy, legacy + 4);
  if (!has_shape && !has_legacy) b.shape = {static_cast<int64_t>(b.data.size())};
  int64_t n = 1;
  for (int64_t d : b.shape) {
    if (d < 0 || d > (int64_t(1) << 40)) r.fail("blob dimension " + std::to_string(d) + " out of range");
    n *= d;
    if (n > (int64_t(1) << 40)) r.fail("blob too large");
  }
  if (static_cast<size_t>(n) != b.data.size())
    r.fail("blob shape holds " + std::to_string(n) + " values but " + std::to_string(b.data.size()) + " are stored");
  return b;
}

void read_layer(Reader r, bool v1, WeightMap* out) {
  std::string name, type;
  std::vector<CaffeBlob> blobs;
  const uint32_t kName = v1 ? 4 : 1, kType = v1 ? 5 : 2, kBlobs = v1 ? 6 : 7;
  uint32_t f;
  int w;
  while (r.tag(&f, &w)) {
    if (f == kName && w == kLengthDelimited) name = r.string();
    else if (f == kType && !v1 && w == kLengthDelimited) type = r.string();
    else if (f == kType && v1 && w == kVarint) type = v1_type_name(static_cast<int>(r.varint()));
    else if (f == kBlobs && w == kLengthDelimited) blobs.push_back(read_blob(r.sub("BlobProto")));
    else r.skip(w);
  }
  auto it = out->find(name);
  if (it == out->end()) out->emplace(name, LayerWeights{type, std::move(blobs)});
  else if (it->second.blobs.empty() && !blobs.empty()) it->second = LayerWeights{type, std::move(blobs)};
}

}  // namespace

WeightMap parse_caffemodel(const uint8_t* data, size_t size, const std::string& origin) {
  if (size == 0) throw CaffeError(origin + ": empty caffemodel file");
  WeightMap out;
  Reader r(data, size, 0, origin, "NetParameter");
  uint32_t f;
  int w;
  size_t layers = 0;
  while (r.tag(&f, &w)) {
    if ((f == 100 || f == 2) && w == kLengthDelimited) {
      read_layer(r.sub(f == 100 ? "LayerParameter" : "V1LayerParameter"), f == 2, &out);
      ++layers;
    } else {
      r.skip(w);
    }
  }
  if (layers == 0) throw CaffeError(origin + ": not a caffemodel (no layers found in the NetParameter)");
  return out;
}

namespace {
struct V1Type {
  int value;
  const char* ident;
  const char* name;
};
// V1LayerParameter.LayerType (caffe.proto) and the layer type names that replaced them.
const V1Type kV1Types[] = {
    {35, "ABSVAL", "AbsVal"}, {1, "ACCURACY", "Accuracy"}, {30, "ARGMAX", "ArgMax"}, {2, "BNLL", "BNLL"},
    {3, "CONCAT", "Concat"}, {37, "CONTRASTIVE_LOSS", "ContrastiveLoss"}, {4, "CONVOLUTION", "Convolution"},
    {5, "DATA", "Data"}, {39, "DECONVOLUTION", "Deconvolution"}, {6, "DROPOUT", "Dropout"},
    {32, "DUMMY_DATA", "DummyData"}, {7, "EUCLIDEAN_LOSS", "EuclideanLoss"}, {25, "ELTWISE", "Eltwise"},
    {38, "EXP", "Exp"}, {8, "FLATTEN", "Flatten"}, {9, "HDF5_DATA", "HDF5Data"}, {10, "HDF5_OUTPUT", "HDF5Output"},
    {28, "HINGE_LOSS", "HingeLoss"}, {11, "IM2COL", "Im2col"}, {12, "IMAGE_DATA", "ImageData"},
    {13, "INFOGAIN_LOSS", "InfogainLoss"}, {14, "INNER_PRODUCT", "InnerProduct"}, {15, "LRN", "LRN"},
    {29, "MEMORY_DATA", "MemoryData"}, {16, "MULTINOMIAL_LOGISTIC_LOSS", "MultinomialLogisticLoss"},
    {34, "MVN", "MVN"}, {17, "POOLING", "Pooling"}, {26, "POWER", "Power"}, {18, "RELU", "ReLU"},
    {19, "SIGMOID", "Sigmoid"}, {27, "SIGMOID_CROSS_ENTROPY_LOSS", "SigmoidCrossEntropyLoss"},
    {36, "SILENCE", "Silence"}, {20, "SOFTMAX", "Softmax"}, {21, "SOFTMAX_LOSS", "SoftmaxWithLoss"},
    {22, "SPLIT", "Split"}, {33, "SLICE", "Slice"}, {23, "TANH", "TanH"}, {24, "WINDOW_DATA", "WindowData"},
    {31, "THRESHOLD", "Threshold"},
};
}  // namespace

std::string v1_type_name(int value) {
  for (const auto& t : kV1Types)
    if (t.value == value) return t.name;
  return "";
}

std::string v1_type_name(const std::string& identifier) {
  for (const auto& t : kV1Types)
    if (identifier == t.ident) return t.name;
  return "";
}

}  // namespace caffe
}  // namespace minnow
