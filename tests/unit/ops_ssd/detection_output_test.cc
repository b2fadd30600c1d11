// caffe::DetectionOutput against a reference written from the SSD procedure (decode,
// per-class threshold + top_k + greedy NMS, keep_top_k over classes), over random
// inputs and attribute combinations, and the ssd_fmnist model's reference detections.
#include "ssd_test_util.h"
#include "tensor_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <tuple>

using namespace minnow;

namespace {

struct Cfg {
  int64_t C = 4, bg = 0, top_k = -1, keep_top_k = -1;
  bool share = true, var_in_target = false, corner = false;
  float nms = 0.45f, conf = 0.01f;
  bool has_conf = true;
};

struct Det {
  int img, label;
  float score, box[4];
};

double iou(const float* a, const float* b) {
  double iw = std::min(a[2], b[2]) - std::max(a[0], b[0]), ih = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (iw <= 0 || ih <= 0) return 0;  // touching or apart: no overlap
  auto area = [](const float* x) { return std::max(0.0, double(x[2] - x[0])) * std::max(0.0, double(x[3] - x[1])); };
  double inter = iw * ih;
  return inter / (area(a) + area(b) - inter);
}

std::vector<Det> reference(const Cfg& c, int64_t N, int64_t P, const std::vector<float>& loc,
                           const std::vector<float>& conf, const std::vector<float>& prior) {
  std::vector<Det> all;
  const int64_t L = c.share ? 1 : c.C;
  for (int64_t n = 0; n < N; ++n) {
    std::vector<Det> dets;
    for (int64_t cls = 0; cls < c.C; ++cls) {
      if (cls == c.bg) continue;
      std::vector<std::pair<float, int64_t>> cand;
      for (int64_t p = 0; p < P; ++p) {
        float s = conf[size_t((n * P + p) * c.C + cls)];
        if (!c.has_conf || s > c.conf) cand.push_back({s, p});
      }
      std::stable_sort(cand.begin(), cand.end(), [](auto& a, auto& b) { return a.first > b.first; });
      if (c.top_k >= 0 && int64_t(cand.size()) > c.top_k) cand.resize(size_t(c.top_k));
      std::vector<Det> kept;
      for (auto& [s, p] : cand) {
        const float* pb = &prior[size_t(p * 4)];
        const float* pv = &prior[size_t(P * 4 + p * 4)];
        const float* l = &loc[size_t(((n * P + p) * L + (c.share ? 0 : cls)) * 4)];
        float v[4] = {1, 1, 1, 1};
        if (!c.var_in_target) std::copy(pv, pv + 4, v);
        Det d{int(n), int(cls), s, {}};
        if (c.corner) {
          for (int k = 0; k < 4; ++k) d.box[k] = pb[k] + v[k] * l[k];
        } else {
          double pw = pb[2] - pb[0], ph = pb[3] - pb[1], cx = v[0] * l[0] * pw + (pb[0] + pb[2]) / 2,
                 cy = v[1] * l[1] * ph + (pb[1] + pb[3]) / 2, w = std::exp(v[2] * l[2]) * pw, h = std::exp(v[3] * l[3]) * ph;
          d.box[0] = float(cx - w / 2); d.box[1] = float(cy - h / 2); d.box[2] = float(cx + w / 2); d.box[3] = float(cy + h / 2);
        }
        bool ok = true;
        for (auto& k : kept) ok = ok && iou(k.box, d.box) <= c.nms;
        if (ok) kept.push_back(d);
      }
      dets.insert(dets.end(), kept.begin(), kept.end());
    }
    if (c.keep_top_k >= 0 && int64_t(dets.size()) > c.keep_top_k) {
      std::stable_sort(dets.begin(), dets.end(), [](auto& a, auto& b) { return a.score > b.score; });
      dets.resize(size_t(c.keep_top_k));
    }
    all.insert(all.end(), dets.begin(), dets.end());
  }
  return all;
}

std::vector<Det> run_engine(const Cfg& c, int64_t N, int64_t P, const std::vector<float>& loc,
                            const std::vector<float>& conf, const std::vector<float>& prior, bool softmax_first = false) {
  const int64_t L = c.share ? 1 : c.C;
  ModelBuilder b("det");
  b.add_input("loc", DataType::kFloat32, Shape{N, P * L * 4});
  b.add_input("conf", DataType::kFloat32, softmax_first ? Shape{N, P, c.C} : Shape{N, P * c.C});
  b.add_constant("prior", Tensor::from_vector<float>({1, 2, P * 4}, prior));
  std::vector<Attr> a{Attr::Int("num_classes", c.C), Attr::Int("share_location", c.share),
                      Attr::Int("background_label_id", c.bg), Attr::Float("nms_threshold", c.nms),
                      Attr::Int("top_k", c.top_k), Attr::Int("keep_top_k", c.keep_top_k),
                      Attr::Int("variance_encoded_in_target", c.var_in_target),
                      Attr::String("code_type", c.corner ? "CORNER" : "CENTER_SIZE")};
  if (c.has_conf) a.push_back(Attr::Float("confidence_threshold", c.conf));
  std::string conf_name = "conf";
  if (softmax_first) {
    b.add_node("Softmax", {"conf"}, {"prob"}, {Attr::Int("axis", -1)});
    conf_name = "prob";
  }
  b.add_node("DetectionOutput", {"loc", conf_name, "prior"}, {"det"}, a, "detection_out", "caffe", 1);
  b.add_output("det");
  std::string backend;
  auto out = ssdtest::run(b, {Tensor::from_vector<float>({N, P * L * 4}, loc),
                              Tensor::from_vector<float>(softmax_first ? Shape{N, P, c.C} : Shape{N, P * c.C}, conf)}, &backend);
  CHECK(backend == "ops_ssd");
  const Tensor& t = out[0];
  REQUIRE(t.shape().size() == 4);
  REQUIRE(t.shape()[3] == 7);
  std::vector<Det> dets;
  for (int64_t r = 0; r < t.shape()[2]; ++r) {
    const float* row = t.data<float>() + r * 7;
    if (row[1] == -1.f) {  // Caffe's "no detection" row: one per image, only when none at all
      CHECK(t.shape()[2] == N);
      CHECK(row[0] == float(r));
      continue;
    }
    dets.push_back(Det{int(row[0]), int(row[1]), row[2], {row[3], row[4], row[5], row[6]}});
  }
  return dets;
}

void compare(std::vector<Det> got, std::vector<Det> want, float tol) {
  auto key = [](const Det& d) { return std::make_tuple(d.img, d.label, -d.score, d.box[0], d.box[1]); };
  auto by = [&](const Det& a, const Det& b) { return key(a) < key(b); };
  std::sort(got.begin(), got.end(), by);
  std::sort(want.begin(), want.end(), by);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].img == want[i].img);
    CHECK(got[i].label == want[i].label);
    CHECK(std::fabs(got[i].score - want[i].score) <= tol);
    for (int k = 0; k < 4; ++k) CHECK(std::fabs(got[i].box[k] - want[i].box[k]) <= tol);
  }
}

std::vector<float> random_priors(int64_t P, std::mt19937& g) {
  std::uniform_real_distribution<float> u(0, 1), s(0.05f, 0.4f);
  std::vector<float> pr;
  for (int64_t p = 0; p < P; ++p) {
    float cx = u(g), cy = u(g), w = s(g), h = s(g);
    // Clustered centers so that NMS has overlaps to resolve.
    if (p % 3) { cx = std::round(cx * 3) / 3; cy = std::round(cy * 3) / 3; }
    pr.insert(pr.end(), {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2});
  }
  for (int64_t p = 0; p < P; ++p) pr.insert(pr.end(), {0.1f, 0.1f, 0.2f, 0.2f});
  return pr;
}

}  // namespace

TEST_CASE("DetectionOutput matches the reference over random inputs and attributes") {
  std::mt19937 g(2024);
  std::uniform_real_distribution<float> u(0, 1), l(-1.5f, 1.5f);
  for (int it = 0; it < 60; ++it) {
    Cfg c;
    c.C = 2 + it % 5;
    c.bg = it % 6 == 5 ? -1 : it % 3 == 2 ? c.C - 1 : 0;
    c.share = it % 4 != 3;
    c.var_in_target = it % 5 == 4;
    c.corner = it % 9 == 8;
    c.top_k = it % 3 == 0 ? -1 : 1 + it % 7;
    c.keep_top_k = it % 2 ? -1 : 2 + it % 5;
    c.nms = 0.2f + 0.1f * float(it % 6);
    c.has_conf = it % 8 != 7;
    c.conf = 0.05f * float(it % 5);
    const int64_t N = 1 + it % 3, P = 3 + (it * 7) % 23, L = c.share ? 1 : c.C;
    std::vector<float> loc(size_t(N * P * L * 4)), conf(size_t(N * P * c.C));
    for (float& v : loc) v = l(g);
    for (float& v : conf) v = u(g);
    // A few exact ties in scores (order must then follow the prior index).
    if (P > 4) conf[2] = conf[2 + c.C] = 0.77f;
    auto prior = random_priors(P, g);
    CAPTURE(it);
    compare(run_engine(c, N, P, loc, conf, prior), reference(c, N, P, loc, conf, prior), 1e-5f);
  }
}

TEST_CASE("rows are grouped by label, by score within a label, as Caffe writes them") {
  Cfg c;
  c.C = 3;
  c.nms = 0.5f;
  std::vector<float> prior = {0, 0, 0.2f, 0.2f, 0.5f, 0.5f, 0.9f, 0.9f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f};
  std::vector<float> loc(8, 0.f);
  // prior 0: class 1 0.3, class 2 0.9; prior 1: class 1 0.8, class 2 0.2.
  std::vector<float> conf = {0.0f, 0.3f, 0.9f, 0.0f, 0.8f, 0.2f};
  auto d = run_engine(c, 1, 2, loc, conf, prior);
  REQUIRE(d.size() == 4);
  CHECK(d[0].label == 1); CHECK(d[0].score == doctest::Approx(0.8));
  CHECK(d[1].label == 1); CHECK(d[1].score == doctest::Approx(0.3));
  CHECK(d[2].label == 2); CHECK(d[2].score == doctest::Approx(0.9));
  CHECK(d[3].label == 2); CHECK(d[3].box[2] == doctest::Approx(0.9));
  // Zero offsets decode to the priors themselves.
  CHECK(d[2].box[0] == doctest::Approx(0.0));
  CHECK(d[2].box[3] == doctest::Approx(0.2));
}

TEST_CASE("known answer: ssd_fmnist detections (Softmax + DetectionOutput on the model's outputs)") {
  const std::string dir = ssdtest::data_dir();
  auto loc = cli::read_tensor_file(dir + "test_data_set_0/output_0.pb");
  auto conf = cli::read_tensor_file(dir + "test_data_set_0/output_1.pb");
  REQUIRE(loc);
  REQUIRE(conf);
  REQUIRE(loc.value().shape() == Shape{4, 756, 4});
  REQUIRE(conf.value().shape() == Shape{4, 756, 11});
  std::ifstream pf(dir + "priors_xyxy_norm_f32.bin", std::ios::binary);
  std::vector<float> prior(756 * 4);
  pf.read(reinterpret_cast<char*>(prior.data()), std::streamsize(prior.size() * 4));
  for (int i = 0; i < 756; ++i) prior.insert(prior.end(), {0.1f, 0.1f, 0.2f, 0.2f});
  std::ifstream jf(dir + "test_data_set_0_detections.json");
  auto js = nlohmann::json::parse(jf);
  REQUIRE(js.size() == 4);
  std::vector<Det> want;
  for (int img = 0; img < 4; ++img)
    for (const auto& r : js[size_t(img)])
      want.push_back(Det{img, int(r[0].get<double>()), r[1].get<float>(),
                         {r[2].get<float>(), r[3].get<float>(), r[4].get<float>(), r[5].get<float>()}});
  Cfg c;
  c.C = 11;
  c.bg = 0;
  c.nms = 0.45f;
  c.conf = 0.01f;
  c.top_k = 400;
  c.keep_top_k = 100;
  const Tensor& L = loc.value();
  const Tensor& C = conf.value();
  std::vector<float> lv(L.data<float>(), L.data<float>() + L.elements()), cv(C.data<float>(), C.data<float>() + C.elements());
  auto got = run_engine(c, 4, 756, lv, cv, prior, /*softmax_first=*/true);
  MESSAGE("ssd_fmnist: " << got.size() << " detections, reference " << want.size());
  compare(got, want, 1e-5f);
}

TEST_CASE("DetectionOutput refuses inputs that disagree, naming the node") {
  ModelBuilder b("det");
  b.add_input("loc", DataType::kFloat32, Shape{1, 12});
  b.add_input("conf", DataType::kFloat32, Shape{1, 10});
  b.add_input("prior", DataType::kFloat32, Shape{1, 2, 16});
  b.add_node("DetectionOutput", {"loc", "conf", "prior"}, {"det"}, {Attr::Int("num_classes", 2)}, "det_bad", "caffe", 1);
  b.add_output("det");
  std::string e = ssdtest::error_of(b, {});
  CHECK(e.find("det_bad") != std::string::npos);
  CHECK(e.find("loc has 12 values per image; 4 priors need 16") != std::string::npos);
}
