// The same network from two frameworks: UltraFace RFB-320 imported from Caffe
// (prototxt + caffemodel) and from ONNX (the simplified export, whose boxes are raw like
// Caffe's, and the full export, whose scores are the same). Both go through the user's path
// (file -> frontend plugin -> prepare -> session); outputs must agree within 1e-4 on the
// reference image and on a synthetic one, so agreement does not rest on one input.
#include <doctest/doctest.h>

#include <minnow/minnow.h>

#include "tensor_io.h"
#include "../unit/test_util.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace minnow;

namespace {

const std::string kData = MINNOW_TEST_DATA_DIR;

// One engine with exactly the build's plugins, shared by the cases of this file.
std::shared_ptr<Engine> engine() {
  static std::shared_ptr<Engine> e = test::make_engine();
  return e;
}

// Outputs by name ("scores", "boxes") of one model on one input.
std::map<std::string, Tensor> run(const std::string& path, const std::vector<std::pair<std::string, std::string>>& options,
                                  const Tensor& input) {
  auto model = engine()->load_model(path, options);
  REQUIRE_MESSAGE(model.is_ok(), model.status().message());
  auto pm = engine()->prepare(model.value());
  REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
  auto s = Session::create(pm.value());
  REQUIRE_MESSAGE(s.is_ok(), s.status().message());
  auto out = s.value()->run({input});
  REQUIRE_MESSAGE(out.is_ok(), out.status().message());
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < out.value().size(); ++i) named[s.value()->output_name(i)] = std::move(out.value()[i]);
  return named;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  float m = 0;
  for (int64_t i = 0; i < a.elements(); ++i) m = std::max(m, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

}  // namespace

TEST_CASE("UltraFace RFB-320: Caffe and ONNX imports give the same outputs") {
  const std::string caffe_dir = kData + "/caffe/ultraface/", onnx_dir = kData + "/onnx/ultraface_rfb320/";
  auto ref_in = cli::read_tensor_file(caffe_dir + "img1_320x240/input_0.pb");
  REQUIRE_MESSAGE(ref_in.is_ok(), ref_in.status().message());
  // A synthetic input in the model's range ((u - 127) / 128): smooth gradients plus noise.
  Tensor synth(DataType::kFloat32, ref_in.value().shape());
  std::mt19937 rng(320);
  std::uniform_real_distribution<float> noise(-0.2f, 0.2f);
  for (int64_t i = 0; i < synth.elements(); ++i)
    synth.data<float>()[i] = std::clamp(std::sin(0.01f * static_cast<float>(i % 76800)) * 0.7f + noise(rng), -1.f, 1.f);

  const Tensor* inputs[] = {&ref_in.value(), &synth};
  for (const Tensor* in : inputs) {
    auto caffe = run(caffe_dir + "RFB-320.prototxt", {{"weights", caffe_dir + "RFB-320.caffemodel"}}, *in);
    auto simplified = run(onnx_dir + "version-RFB-320_simplified.onnx", {}, *in);
    auto full = run(onnx_dir + "version-RFB-320.onnx", {}, *in);
    REQUIRE(caffe.size() == 2);
    REQUIRE(simplified.size() == 2);
    // The Caffe blob names are the ONNX output names.
    REQUIRE(caffe.count("scores"));
    REQUIRE(caffe.count("boxes"));
    REQUIRE(simplified.count("scores"));
    REQUIRE(simplified.count("boxes"));
    REQUIRE(full.count("scores"));
    CHECK(caffe["scores"].shape() == Shape{1, 4420, 2});
    CHECK(caffe["boxes"].shape() == Shape{1, 4420, 4});
    const float d_scores = max_abs_diff(caffe["scores"], simplified["scores"]);
    const float d_boxes = max_abs_diff(caffe["boxes"], simplified["boxes"]);
    const float d_full = max_abs_diff(caffe["scores"], full["scores"]);
    MESSAGE((in == &synth ? "synthetic" : "reference") << " input: Caffe vs ONNX max |difference| scores " << d_scores
                                                       << ", raw boxes " << d_boxes << ", scores vs full export " << d_full);
    CHECK(d_scores <= 1e-4f);
    CHECK(d_boxes <= 1e-4f);
    CHECK(d_full <= 1e-4f);
  }
}
