// Real ONNX models (tests/data): each reference output is matched within 1e-4 absolute,
// through the same path a user takes (ONNX file -> frontend -> prepare -> session).
#include <doctest/doctest.h>

#include <minnow/minnow.h>

#include "tensor_io.h"
#include "../unit/test_util.h"

#include <algorithm>
#include <cmath>
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

Tensor read_pb(const std::string& path) {
  auto t = cli::read_tensor_file(path);
  REQUIRE_MESSAGE(t.is_ok(), t.status().message());
  return std::move(t.value());
}

std::vector<Tensor> run(const std::string& model_path, const std::vector<Tensor>& inputs) {
  auto model = engine()->load_model(model_path);
  REQUIRE_MESSAGE(model.is_ok(), model.status().message());
  auto pm = engine()->prepare(model.value());
  REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
  auto s = Session::create(pm.value());
  REQUIRE_MESSAGE(s.is_ok(), s.status().message());
  auto out = s.value()->run(inputs);
  REQUIRE_MESSAGE(out.is_ok(), out.status().message());
  return std::move(out.value());
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  float m = 0;
  for (int64_t i = 0; i < a.elements(); ++i) m = std::max(m, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

void check_case(const std::string& model, const std::vector<std::string>& inputs,
                const std::vector<std::string>& outputs, float atol = 1e-4f) {
  std::vector<Tensor> in;
  for (const auto& p : inputs) in.push_back(read_pb(p));
  auto out = run(model, in);
  REQUIRE(out.size() >= outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor ref = read_pb(outputs[i]);
    float d = max_abs_diff(out[i], ref);
    // 1e-4 absolute, except where the outputs are so large that float32 cannot hold
    // 1e-4 (winml MNIST's logits reach 6000, where one ulp is 5e-4): there a few ulps,
    // 1e-6 of the largest magnitude.
    float big = 0;
    for (int64_t k = 0; k < ref.elements(); ++k) big = std::max(big, std::fabs(ref.data<float>()[k]));
    float tol = std::max(atol, 1e-6f * big);
    INFO(model << " output " << i << " max |diff| " << d << ", tolerance " << tol);
    CHECK(d <= tol);
  }
}

}  // namespace

TEST_SUITE("onnx_models") {
  TEST_CASE("Fashion-MNIST mlp, lenet5, mobilenet: fixed and symbolic batch") {
    for (const char* m : {"mlp", "lenet5", "mobilenet"}) {
      std::string dir = kData + "/fashion_mnist/" + m + "/";
      check_case(dir + m + ".onnx", {dir + "test_data_set_0/input_0.pb"}, {dir + "test_data_set_0/output_0.pb"});
      check_case(dir + m + "_dynN.onnx", {dir + "test_data_set_0/input_0.pb"}, {dir + "test_data_set_0/output_0.pb"});
      check_case(dir + m + "_dynN.onnx", {dir + "test_data_set_1/input_0.pb"}, {dir + "test_data_set_1/output_0.pb"});
    }
  }

  TEST_CASE("winml MNIST (CNTK export, opset 7, auto_pad SAME_UPPER)") {
    std::string dir = kData + "/onnx/winml_mnist/";
    check_case(dir + "mnist.onnx", {dir + "mnist_28/input_0.pb"}, {dir + "mnist_28/output_0.pb"});
  }

  TEST_CASE("SqueezeNet 1.0 with float16 weights and input: top-5 equal, probabilities within 1e-3") {
    std::string dir = kData + "/onnx/winml_squeezenet_fp16/";
    auto out = run(dir + "SqueezeNet_fp16.onnx", {read_pb(dir + "kitten_224_bgr_0_255/input_0.pb")});
    Tensor ref = read_pb(dir + "kitten_224_bgr_0_255/output_0_fp32compute.pb");
    REQUIRE(out[0].elements() == ref.elements());
    auto top5 = [](const float* p, int64_t n) {
      std::vector<int64_t> idx(size_t(n), 0);
      for (int64_t i = 0; i < n; ++i) idx[size_t(i)] = i;
      std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
      idx.resize(5);
      return idx;
    };
    CHECK(top5(out[0].data<float>(), 1000) == top5(ref.data<float>(), 1000));
    CHECK(top5(out[0].data<float>(), 1000)[0] == 281);
    float d = 0;
    for (int64_t i = 0; i < 1000; ++i) d = std::max(d, std::fabs(out[0].data<float>()[i] - ref.data<float>()[i]));
    CHECK(d <= 1e-3f);
  }

  TEST_CASE("UltraFace RFB-320: simplified (raw boxes) and full (decoded boxes)") {
    std::string dir = kData + "/onnx/ultraface_rfb320/", ref = kData + "/caffe/ultraface/img1_320x240/";
    check_case(dir + "version-RFB-320_simplified.onnx", {ref + "input_0.pb"},
               {ref + "output_scores.pb", ref + "output_boxes_raw_simplified_and_caffe.pb"});
    check_case(dir + "version-RFB-320.onnx", {ref + "input_0.pb"},
               {ref + "output_scores.pb", dir + "output_boxes_version-RFB-320.pb"});
  }

  TEST_CASE("ssd_fmnist raw outputs (loc, conf), fixed and symbolic batch") {
    std::string dir = kData + "/onnx/ssd_fmnist/";
    // The reference set is a batch of 4 canvases: the symbolic-batch file takes it whole.
    check_case(dir + "ssd_fmnist_dynN.onnx", {dir + "test_data_set_0/input_0.pb"},
               {dir + "test_data_set_0/output_0.pb", dir + "test_data_set_0/output_1.pb"});
    // The batch-1 file gets the first canvas and must give the first rows.
    Tensor all = read_pb(dir + "test_data_set_0/input_0.pb");
    Tensor first(DataType::kFloat32, {1, 1, 96, 96});
    std::copy(all.data<float>(), all.data<float>() + 96 * 96, first.data<float>());
    auto out = run(dir + "ssd_fmnist.onnx", {first});
    for (int k = 0; k < 2; ++k) {
      Tensor ref = read_pb(dir + "test_data_set_0/output_" + std::to_string(k) + ".pb");
      int64_t n = out[k].elements();
      REQUIRE(ref.elements() == 4 * n);
      float d = 0;
      for (int64_t i = 0; i < n; ++i) d = std::max(d, std::fabs(out[k].data<float>()[i] - ref.data<float>()[i]));
      CHECK(d <= 1e-4f);
    }
  }
}
