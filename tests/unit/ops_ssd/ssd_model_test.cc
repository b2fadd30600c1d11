// ssd_fmnist end to end: the ONNX detector imported, PriorBox + DetectionOutput appended
// from its priorbox.json (`minnow import --ssd-priors`), run on the first 4 test canvases,
// against the reference detections; and the VOC mAP used by `minnow eval --task detection`.
#include "detection_eval.h"
#include "ssd_priors.h"
#include "ssd_test_util.h"
#include "tensor_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <tuple>

using namespace minnow;

namespace {

struct Row {
  int img, label;
  float score;
  float box[4];
};

std::vector<uint8_t> imported_ssd() {
  auto bytes = ssdtest::engine()->import_model(std::string(MINNOW_SOURCE_DIR) + "/tests/data/onnx/ssd_fmnist/ssd_fmnist_dynN.onnx");
  REQUIRE_MESSAGE(bytes, bytes.status().message());
  return bytes.value();
}

}  // namespace

TEST_CASE("ssd_fmnist with --ssd-priors gives the reference detections") {
  const std::string dir = ssdtest::data_dir();
  auto bytes = cli::append_ssd_postprocess(imported_ssd(), dir + "priorbox.json");
  REQUIRE_MESSAGE(bytes, bytes.status().message());
  auto model = Model::load_memory(bytes.value().data(), bytes.value().size(), "ssd");
  REQUIRE_MESSAGE(model, model.status().message());
  REQUIRE(model.value()->graph().outputs.size() == 1);
  auto pm = ssdtest::engine()->prepare(model.value());
  REQUIRE_MESSAGE(pm, pm.status().message());
  auto s = Session::create(pm.value());
  REQUIRE(s);
  auto x = cli::read_tensor_file(std::string(MINNOW_SOURCE_DIR) + "/tests/data/onnx/ssd_fmnist/test_data_set_0/input_0.pb");
  REQUIRE(x);
  REQUIRE(x.value().shape() == Shape{4, 1, 96, 96});
  auto out = s.value()->run({x.value()});
  REQUIRE_MESSAGE(out, out.status().message());
  const Tensor& y = out.value()[0];
  REQUIRE(y.shape().size() == 4);
  REQUIRE(y.shape()[3] == 7);
  std::vector<Row> got, want;
  for (int64_t r = 0; r < y.shape()[2]; ++r) {
    const float* v = y.data<float>() + r * 7;
    got.push_back(Row{int(v[0]), int(v[1]), v[2], {v[3], v[4], v[5], v[6]}});
  }
  std::ifstream jf(dir + "test_data_set_0_detections.json");
  auto js = nlohmann::json::parse(jf);
  REQUIRE(js.size() == 4);
  for (int img = 0; img < 4; ++img)
    for (const auto& r : js[size_t(img)])
      want.push_back(Row{img, int(r[0].get<double>()), r[1].get<float>(),
                         {r[2].get<float>(), r[3].get<float>(), r[4].get<float>(), r[5].get<float>()}});
  // The output has exactly the detections (run-time rows), no padding.
  REQUIRE(got.size() == want.size());
  auto key = [](const Row& d) { return std::make_tuple(d.img, d.label, -d.score, d.box[0]); };
  auto by = [&](const Row& a, const Row& b) { return key(a) < key(b); };
  std::sort(got.begin(), got.end(), by);
  std::sort(want.begin(), want.end(), by);
  float worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].img == want[i].img);
    CHECK(got[i].label == want[i].label);
    worst = std::max(worst, std::fabs(got[i].score - want[i].score));
    for (int k = 0; k < 4; ++k) worst = std::max(worst, std::fabs(got[i].box[k] - want[i].box[k]));
  }
  MESSAGE("ssd_fmnist + --ssd-priors: " << got.size() << " detections, max |diff| " << worst);
  CHECK(worst < 1e-4f);
}

TEST_CASE("--ssd-priors names what is wrong") {
  const std::string dir = ssdtest::data_dir();
  cli::SsdPriorsOptions o;
  o.loc = "boxes";
  auto r = cli::append_ssd_postprocess(imported_ssd(), dir + "priorbox.json", o);
  REQUIRE_FALSE(r);
  CHECK(r.status().message().find("no output 'boxes'") != std::string::npos);
  CHECK(r.status().message().find("'loc'") != std::string::npos);
  auto missing = cli::append_ssd_postprocess(imported_ssd(), dir + "no_such.json");
  REQUIRE_FALSE(missing);
  CHECK(missing.status().message().find("no_such.json") != std::string::npos);
}

TEST_CASE("VOC mAP (all points): known answers") {
  using cli::Detection;
  std::vector<cli::GtImage> gt(2);
  gt[0].boxes = {{0.f, 0.f, 0.5f, 0.5f}};
  gt[0].labels = {1};
  gt[1].boxes = {{0.5f, 0.5f, 1.f, 1.f}, {0.f, 0.f, 0.2f, 0.2f}};
  gt[1].labels = {1, 2};
  // Perfect predictions: every class AP 1.
  std::vector<Detection> perfect{{0, 1, 0.9f, {0.f, 0.f, 0.5f, 0.5f}}, {1, 1, 0.8f, {0.5f, 0.5f, 1.f, 1.f}},
                                 {1, 2, 0.7f, {0.f, 0.f, 0.2f, 0.2f}}};
  auto m = cli::voc_map(perfect, gt);
  CHECK(m.map == doctest::Approx(1.0));
  CHECK(m.ap.size() == 2);
  // Class 1: hit (0.9), miss (IoU < 0.5, 0.8), hit (0.7): recall 0.5, 0.5, 1 and precision
  // 1, 0.5, 2/3 -> AP = 0.5 * 1 + 0.5 * 2/3. Class 2: a duplicate of a matched box is a
  // false positive, after the hit -> AP 1. A detection of a class without ground truth
  // (3) is ignored.
  std::vector<Detection> d{{0, 1, 0.9f, {0.f, 0.f, 0.5f, 0.5f}},    {1, 1, 0.8f, {0.f, 0.5f, 0.3f, 1.f}},
                           {1, 1, 0.7f, {0.5f, 0.5f, 1.f, 0.95f}},  {1, 2, 0.6f, {0.f, 0.f, 0.2f, 0.2f}},
                           {1, 2, 0.5f, {0.f, 0.f, 0.2f, 0.19f}},   {0, 3, 0.99f, {0.f, 0.f, 1.f, 1.f}}};
  m = cli::voc_map(d, gt);
  CHECK(m.ap[1] == doctest::Approx(0.5 + 0.5 * 2.0 / 3.0));
  CHECK(m.ap[2] == doctest::Approx(1.0));
  CHECK(m.ap.count(3) == 0);
  CHECK(m.map == doctest::Approx((0.5 + 0.5 * 2.0 / 3.0 + 1.0) / 2));
  // No detections at all: AP 0.
  CHECK(cli::voc_map({}, gt).map == doctest::Approx(0.0));
}

TEST_CASE("UltraFace RFB-320: boxes decoded from the raw outputs match the model's own decoding") {
  // The simplified ONNX file ends in raw offsets; the full file decodes them in its graph.
  // Our PriorBox + DetectionOutput (priors from ultraface_priors.json), with NMS off so
  // every face above the threshold comes out, must give the full model's boxes.
  const std::string data = std::string(MINNOW_SOURCE_DIR) + "/tests/data/";
  const std::string dir = data + "onnx/ultraface_rfb320/", ref = data + "caffe/ultraface/img1_320x240/";
  auto raw = ssdtest::engine()->import_model(dir + "version-RFB-320_simplified.onnx");
  REQUIRE_MESSAGE(raw, raw.status().message());
  cli::SsdPriorsOptions o;
  o.loc = "boxes";
  o.conf = "scores";
  auto bytes = cli::append_ssd_postprocess(raw.value(), dir + "ultraface_priors.json", o);
  REQUIRE_MESSAGE(bytes, bytes.status().message());
  auto ir = parse_model(bytes.value().data(), bytes.value().size(), nullptr, "ultraface");
  REQUIRE(ir);
  for (auto& n : ir.value().graph.nodes)
    if (n.op == "DetectionOutput")
      for (auto& a : n.attributes)
        if (a.name == "nms_threshold") a.f = 1.f;  // IoU > 1 never: no suppression
  auto model = ModelBuilder(ir.value()).build();
  REQUIRE_MESSAGE(model, model.status().message());
  auto pm = ssdtest::engine()->prepare(model.value());
  REQUIRE_MESSAGE(pm, pm.status().message());
  auto s = Session::create(pm.value());
  REQUIRE(s);
  auto x = cli::read_tensor_file(ref + "input_0.pb");
  auto scores = cli::read_tensor_file(ref + "output_scores.pb");
  auto decoded = cli::read_tensor_file(dir + "output_boxes_version-RFB-320.pb");
  REQUIRE(x);
  REQUIRE(scores);
  REQUIRE(decoded);
  REQUIRE(decoded.value().shape() == Shape{1, 4420, 4});
  auto out = s.value()->run({x.value()});
  REQUIRE_MESSAGE(out, out.status().message());
  const Tensor& y = out.value()[0];
  const float* sc = scores.value().data<float>();
  const float* db = decoded.value().data<float>();
  int64_t faces = 0;
  for (int64_t p = 0; p < 4420; ++p) faces += sc[p * 2 + 1] > 0.7f;
  CHECK(faces == 86);  // as the model's README says
  REQUIRE(y.shape() == Shape{1, 1, faces, 7});
  // Each row is one prior's face: find it by its score and box among the full model's.
  std::vector<bool> taken(4420, false);
  float worst = 0;
  for (int64_t r = 0; r < faces; ++r) {
    const float* v = y.data<float>() + r * 7;
    CHECK(v[1] == 1.f);
    int64_t best = -1;
    float best_d = 1e9f;
    for (int64_t p = 0; p < 4420; ++p) {
      if (taken[size_t(p)] || std::fabs(sc[p * 2 + 1] - v[2]) > 1e-4f) continue;
      float d = 0;
      for (int k = 0; k < 4; ++k) d = std::max(d, std::fabs(db[p * 4 + k] - v[3 + k]));
      if (d < best_d) best_d = d, best = p;
    }
    REQUIRE(best >= 0);
    taken[size_t(best)] = true;
    worst = std::max(worst, best_d);
  }
  MESSAGE("UltraFace: " << faces << " faces decoded, max |box - model's decoding| " << worst);
  CHECK(worst < 1e-5f);
}
