// Helpers for the Caffe frontend tests: import a prototxt held in a string with weights
// built in code, run it on the built plugins, and compare.
#pragma once

#include "caffe_convert.h"
#include "caffe_error.h"
#include "test_util.h"

#include <doctest/doctest.h>

#include <cfloat>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace minnow {
namespace caffe_test {

using caffe::CaffeBlob;
using caffe::WeightMap;

inline std::shared_ptr<Engine> engine() {
  static std::shared_ptr<Engine> e = test::make_engine();
  return e;
}

inline std::vector<uint8_t> import(const std::string& prototxt, const WeightMap& w, const caffe::ImportOptions& opt = {}) {
  return caffe::import_caffe_text(prototxt, "test.prototxt", &w, "test.caffemodel", opt);
}

inline std::shared_ptr<const Model> load(const std::vector<uint8_t>& bytes) {
  auto m = Model::load_memory(bytes.data(), bytes.size(), "imported");
  if (!m) FAIL(m.status().message());
  return m.value();
}

inline std::vector<Tensor> run(const std::shared_ptr<const Model>& m, const std::vector<Tensor>& inputs) {
  auto pm = engine()->prepare(m);
  if (!pm) FAIL(pm.status().message());
  auto s = Session::create(pm.value());
  if (!s) FAIL(s.status().message());
  auto out = s.value()->run(inputs);
  if (!out) FAIL(out.status().message());
  return out.value();
}

inline std::vector<Tensor> import_and_run(const std::string& prototxt, const WeightMap& w, const std::vector<Tensor>& inputs,
                                          const caffe::ImportOptions& opt = {}) {
  return run(load(import(prototxt, w, opt)), inputs);
}

// Whether a loaded backend runs the standard Split (Caffe's Slice). cpu_dense's Split kernel
// is still being written by the ONNX work; until it lands, tests that need it say so and
// stop instead of failing on someone else's missing kernel.
inline bool split_available() {
  ModelBuilder b("split_probe");
  b.add_input("x", DataType::kFloat32, Shape{1, 4});
  b.add_constant("s", Tensor::from_vector<int64_t>({2}, {2, 2}));
  b.add_node("Split", {"x", "s"}, {"a", "c"}, {Attr::Int("axis", 1)});
  b.add_output("a");
  b.add_output("c");
  auto m = b.build();
  return m && engine()->prepare(m.value());
}

inline CaffeBlob make_blob(Shape shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t = test::random_tensor(shape, seed, lo, hi);
  CaffeBlob b;
  b.shape = shape;
  b.data.assign(t.data<float>(), t.data<float>() + t.elements());
  return b;
}

inline std::string import_error(const std::string& prototxt, const WeightMap* w, const caffe::ImportOptions& opt = {}) {
  try {
    caffe::import_caffe_text(prototxt, "test.prototxt", w, "test.caffemodel", opt);
  } catch (const caffe::CaffeError& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline float max_diff(const Tensor& a, const std::vector<float>& b) {
  if (static_cast<size_t>(a.elements()) != b.size()) return INFINITY;
  float m = 0;
  for (size_t i = 0; i < b.size(); ++i) m = std::max(m, std::fabs(a.data<float>()[i] - b[i]));
  return m;
}

}  // namespace caffe_test
}  // namespace minnow
