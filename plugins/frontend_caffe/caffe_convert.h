// Caffe net (+ weights) -> Minnow model. The conversion walks the layers in order,
// tracking every blob's static shape as Caffe's own Reshape() would, so each layer's
// parameters are checked against real shapes at import (a wrong weight blob is reported
// with the layer's name, not discovered at run time) and layers whose meaning depends on
// shapes (InnerProduct axis, Reshape 0/-1, Flatten axes, Slice points) become exact
// standard ops.
#pragma once

#include "caffe_net.h"
#include "caffe_weights.h"

#include <minnow/model_builder.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace minnow {
namespace caffe {

struct ImportOptions {
  std::string weights_path;                   // .caffemodel; empty: error if a layer needs weights
  std::map<std::string, Shape> input_shapes;  // overrides the prototxt's input dims
  std::vector<std::string> outputs;           // graph outputs (default: blobs nobody reads)
};

// Parses "data:1x3x135x104;other:1x10" (as given in option input_shape).
std::map<std::string, Shape> parse_input_shapes(const std::string& spec);

// Reads prototxt (+ caffemodel) and returns .minnow bytes. Throws CaffeError.
std::vector<uint8_t> import_caffe(const std::string& prototxt_path, const ImportOptions& options,
                                  std::vector<std::string>* notes = nullptr);
// Same from memory (tests).
std::vector<uint8_t> import_caffe_text(const std::string& prototxt, const std::string& origin,
                                       const WeightMap* weights, const std::string& weights_origin,
                                       const ImportOptions& options, std::vector<std::string>* notes = nullptr);

// What a layer converter works with.
class Ctx {
 public:
  Ctx(const NetDef& net, const WeightMap* weights, std::string weights_origin);

  // Tensor of bottom i (its current version).
  std::string in(const LayerDef& l, size_t i);
  const Shape& shape(const std::string& tensor) const;
  // A new tensor for top i with this shape (the blob's next version).
  std::string out(const LayerDef& l, size_t i, const Shape& s);
  // Top i is the same tensor as `tensor` (Split, Dropout): no node.
  void alias(const LayerDef& l, size_t i, const std::string& tensor);
  // An intermediate tensor private to the layer.
  std::string tmp(const LayerDef& l, const std::string& suffix, const Shape& s);
  std::string constant(const LayerDef& l, const std::string& suffix, const Shape& s, const std::vector<float>& v);
  std::string constant_i64(const LayerDef& l, const std::string& suffix, const std::vector<int64_t>& v);
  void node(const LayerDef& l, const std::string& op, const std::vector<std::string>& ins,
            const std::vector<std::string>& outs, std::vector<Attr> attrs = {}, const std::string& domain = "");

  // The layer's weight blobs from the caffemodel; at least `min_count` of them.
  const std::vector<CaffeBlob>& blobs(const LayerDef& l, size_t min_count);
  // Checks a blob holds exactly `count` values (Caffe's shapes vary in legacy files: an
  // InnerProduct weight may be 1x1xNxK; only the element count is binding).
  const CaffeBlob& blob(const LayerDef& l, size_t index, int64_t count, const char* what);

  [[noreturn]] void fail(const LayerDef& l, const std::string& msg) const;
  [[noreturn]] void unsupported(const LayerDef& l, const std::string& msg) const;
  void require(const LayerDef& l, size_t bottoms_min, size_t bottoms_max, size_t tops_min, size_t tops_max) const;
  // Caffe's CanonicalAxisIndex.
  int axis(const LayerDef& l, int64_t axis, size_t rank, const char* what = "axis") const;

  // Layer-order look-ahead for fusions: the layer after the current one (or null), whether
  // the current version of `blob` is read by a layer after index `after`, and skipping
  // the next layer because the current converter consumed it.
  const LayerDef* next_layer() const;
  bool read_after(size_t after, const std::string& blob) const;
  size_t index() const { return index_; }
  void skip_next() { skip_next_ = true; }

  ModelBuilder& builder() { return b_; }
  void note(const std::string& n) { notes_.push_back(n); }

 private:
  friend class Converter;
  std::string fresh(const std::string& base);
  std::string version_name(const std::string& blob);

  const NetDef& net_;
  const WeightMap* weights_;
  std::string weights_origin_;
  ModelBuilder b_;
  std::map<std::string, std::string> current_;  // blob -> tensor
  std::map<std::string, Shape> shapes_;          // tensor -> shape
  std::map<std::string, int> writes_left_;       // blob -> writes still to come
  std::set<std::string> used_names_;
  std::set<std::string> read_;                    // tensors read by some node
  std::vector<std::pair<std::string, std::string>> produced_;  // (blob, tensor) in order
  std::map<std::string, int> nodes_per_layer_;
  std::vector<std::string> notes_;
  size_t index_ = 0;
  bool skip_next_ = false;
};

}  // namespace caffe
}  // namespace minnow
