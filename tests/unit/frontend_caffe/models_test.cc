// The real Caffe models (copied from ../shared/models/thirdparty into tests/data/caffe)
// through the full path: engine -> frontend_caffe plugin (prototxt + caffemodel) ->
// cpu_dense / ops_caffe kernels, compared with the reference outputs within 1e-4.
#include "caffe_test_util.h"
#include "tensor_io.h"

#include <dirent.h>

using namespace minnow;
using namespace minnow::caffe_test;

namespace {

const std::string kData = CAFFE_TEST_DATA;

std::vector<std::string> files_in(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0 && n.size() > 3 && n.substr(n.size() - 3) == ".pb") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs `prototxt` + `caffemodel` on the case folder's input and checks every output_<name>.pb
// whose name is listed in `outputs` (file name -> blob name). Returns the max difference.
float check_model(const std::string& prototxt, const std::string& caffemodel, const std::string& case_dir,
                  const std::map<std::string, std::string>& outputs) {
  std::string in_file = files_in(case_dir, "input").at(0);
  auto input = cli::read_tensor_file(case_dir + "/" + in_file);
  REQUIRE_MESSAGE(input, input.status().message());
  const Shape& is = input.value().shape();
  std::string dims;
  for (int64_t d : is) dims += (dims.empty() ? "" : "x") + std::to_string(d);
  std::string outs;
  for (const auto& kv : outputs) outs += (outs.empty() ? "" : ",") + kv.second;
  // The net's input is resized to the reference input, as Caffe's Reshape would.
  auto model = engine()->load_model(prototxt, {{"weights", caffemodel}, {"input_shape", "data:" + dims}, {"outputs", outs}});
  REQUIRE_MESSAGE(model, model.status().message());
  auto pm = engine()->prepare(model.value());
  REQUIRE_MESSAGE(pm, pm.status().message());
  auto session = Session::create(pm.value());
  REQUIRE(session);
  auto y = session.value()->run({input.value()});
  REQUIRE_MESSAGE(y, y.status().message());
  float worst = 0;
  for (const auto& kv : outputs) {
    auto ref = cli::read_tensor_file(case_dir + "/" + kv.first);
    REQUIRE_MESSAGE(ref, ref.status().message());
    bool found = false;
    for (size_t i = 0; i < y.value().size(); ++i) {
      if (session.value()->output_name(i) != kv.second) continue;
      found = true;
      INFO(prototxt << " output " << kv.second);
      const Tensor& got = y.value()[i];
      REQUIRE(got.elements() == ref.value().elements());
      // Shapes must agree too (references may carry the same dims).
      CHECK(got.shape() == ref.value().shape());
      float d = test::max_abs_diff(got, ref.value());
      worst = std::max(worst, d);
      CHECK(d <= 1e-4f);
    }
    CHECK_MESSAGE(found, "no output named " << kv.second);
  }
  MESSAGE(prototxt << ": max |difference| to the reference " << worst);
  return worst;
}

}  // namespace

TEST_CASE("Caffe LeNet (MNIST) matches the reference, and says 8") {
  std::string dir = kData + "/lenet";
  check_model(dir + "/lenet.prototxt", dir + "/lenet_iter_10000.caffemodel", dir + "/mnist_28",
              {{"output_ip2.pb", "ip2"}, {"output_prob.pb", "prob"}});
  auto ref = cli::read_tensor_file(dir + "/mnist_28/output_prob.pb");
  REQUIRE(ref);
  const float* p = ref.value().data<float>();
  CHECK(std::max_element(p, p + 10) - p == 8);
}

TEST_CASE("MTCNN det1 (PNet) on the transposed full image") {
  std::string dir = kData + "/mtcnn";
  check_model(dir + "/det1.prototxt", dir + "/det1.caffemodel", dir + "/det1_full_image_scale0.3",
              {{"output_prob1.pb", "prob1"}, {"output_conv4-2.pb", "conv4-2"}});
}

TEST_CASE("MTCNN det2 (RNet) and det3 (ONet)") {
  std::string dir = kData + "/mtcnn";
  check_model(dir + "/det2.prototxt", dir + "/det2.caffemodel", dir + "/det2_face_crop",
              {{"output_prob1.pb", "prob1"}, {"output_conv5-2.pb", "conv5-2"}});
  check_model(dir + "/det3.prototxt", dir + "/det3.caffemodel", dir + "/det3_face_crop",
              {{"output_prob1.pb", "prob1"}, {"output_conv6-2.pb", "conv6-2"}, {"output_conv6-3.pb", "conv6-3"}});
}

TEST_CASE("MTCNN det4 (Slice + Concat, five heads)") {
  if (!split_available()) {
    MESSAGE("SKIPPED: no loaded backend runs Split yet (Caffe Slice); det4 needs it");
    return;
  }
  std::string dir = kData + "/mtcnn";
  std::map<std::string, std::string> outs;
  for (int i = 1; i <= 5; ++i) outs["output_fc5_" + std::to_string(i) + ".pb"] = "fc5_" + std::to_string(i);
  check_model(dir + "/det4.prototxt", dir + "/det4.caffemodel", dir + "/det4_random_patches", outs);
}

TEST_CASE("Ultra-Light face detector RFB-320 (Caffe)") {
  std::string dir = kData + "/ultraface";
  // The prototxt's input blob is "input", not "data".
  auto input = cli::read_tensor_file(dir + "/img1_320x240/input_0.pb");
  REQUIRE(input);
  auto model = engine()->load_model(dir + "/RFB-320.prototxt", {{"weights", dir + "/RFB-320.caffemodel"}});
  REQUIRE_MESSAGE(model, model.status().message());
  auto y = run(model.value(), {input.value()});
  auto scores = cli::read_tensor_file(dir + "/img1_320x240/output_scores.pb");
  auto boxes = cli::read_tensor_file(dir + "/img1_320x240/output_boxes_raw_simplified_and_caffe.pb");
  REQUIRE(scores);
  REQUIRE(boxes);
  REQUIRE(y.size() == 2);
  // Outputs in production order: the Softmax'd scores are produced last.
  const Tensor& got_boxes = y[0].shape().back() == 4 ? y[0] : y[1];
  const Tensor& got_scores = y[0].shape().back() == 4 ? y[1] : y[0];
  CHECK(got_scores.shape() == Shape{1, 4420, 2});
  CHECK(got_boxes.shape() == Shape{1, 4420, 4});
  CHECK(test::max_abs_diff(got_scores, scores.value()) <= 1e-4f);
  CHECK(test::max_abs_diff(got_boxes, boxes.value()) <= 1e-4f);
  MESSAGE("RFB-320: max |difference| scores " << test::max_abs_diff(got_scores, scores.value()) << ", boxes "
                                               << test::max_abs_diff(got_boxes, boxes.value()));
  int faces = 0;
  for (int64_t i = 0; i < 4420; ++i) faces += got_scores.data<float>()[i * 2 + 1] > 0.7f;
  CHECK(faces == 86);  // README: 86 priors have face prob > 0.7
}

TEST_CASE("a .caffemodel alone is refused with advice; a missing weights file is an I/O error") {
  std::string dir = kData + "/lenet";
  auto m = engine()->load_model(dir + "/lenet_iter_10000.caffemodel");
  REQUIRE_FALSE(m);
  CHECK(contains(m.status().message(), "import the deploy .prototxt"));
  auto m2 = engine()->load_model(dir + "/lenet.prototxt", {{"weights", dir + "/missing.caffemodel"}});
  REQUIRE_FALSE(m2);
  CHECK(contains(m2.status().message(), "cannot open"));
  auto m3 = engine()->load_model(dir + "/lenet.prototxt", {{"weigths", "x"}});
  REQUIRE_FALSE(m3);
  CHECK(contains(m3.status().message(), "unknown option 'weigths'"));
}
