// caffe::PriorBox against a reference written from Caffe's PriorBoxLayer, over many
// attribute combinations, and the ssd_fmnist model's 756 priors as a known answer.
#include "ssd_test_util.h"

#include <cmath>
#include <fstream>
#include <random>

using namespace minnow;

namespace {

struct PB {
  int64_t H = 3, W = 4, img_h = 32, img_w = 40;
  std::vector<float> mins{8}, maxs, ars, var{0.1f};
  bool flip = true, clip = false;
  float step = 0, step_h = 0, step_w = 0, offset = 0.5f;
  int64_t img_size_attr = 0;
};

// Caffe's procedure, spelled out independently.
std::vector<float> reference(const PB& p) {
  std::vector<float> ratios{1.f};
  for (float a : p.ars) {
    bool dup = false;
    for (float r : ratios) dup = dup || std::fabs(a - r) < 1e-6;
    if (dup) continue;
    ratios.push_back(a);
    if (p.flip) ratios.push_back(1 / a);
  }
  const double ih = p.img_size_attr ? p.img_size_attr : p.img_h, iw = p.img_size_attr ? p.img_size_attr : p.img_w;
  double sh = p.step > 0 ? p.step : p.step_h > 0 ? p.step_h : ih / p.H;
  double sw = p.step > 0 ? p.step : p.step_w > 0 ? p.step_w : iw / p.W;
  std::vector<float> boxes;
  for (int64_t y = 0; y < p.H; ++y)
    for (int64_t x = 0; x < p.W; ++x) {
      double cx = (x + p.offset) * sw, cy = (y + p.offset) * sh;
      auto add = [&](double bw, double bh) {
        for (double v : {(cx - bw / 2) / iw, (cy - bh / 2) / ih, (cx + bw / 2) / iw, (cy + bh / 2) / ih})
          boxes.push_back(float(p.clip ? std::min(1.0, std::max(0.0, v)) : v));
      };
      for (size_t s = 0; s < p.mins.size(); ++s) {
        add(p.mins[s], p.mins[s]);
        if (!p.maxs.empty()) add(std::sqrt(double(p.mins[s]) * p.maxs[s]), std::sqrt(double(p.mins[s]) * p.maxs[s]));
        for (float r : ratios)
          if (std::fabs(r - 1) > 1e-6) add(p.mins[s] * std::sqrt(double(r)), p.mins[s] / std::sqrt(double(r)));
      }
    }
  std::vector<float> out = boxes;
  for (size_t i = 0; i < boxes.size(); ++i) out.push_back(p.var.size() == 1 ? p.var[0] : p.var[i % 4]);
  return out;
}

Tensor run_prior(const PB& p) {
  ModelBuilder b("pb");
  b.add_input("f", DataType::kFloat32, Shape{1, 2, p.H, p.W});
  b.add_input("img", DataType::kFloat32, Shape{1, 1, p.img_h, p.img_w});
  std::vector<Attr> a{Attr::Floats("min_size", p.mins), Attr::Int("flip", p.flip), Attr::Int("clip", p.clip),
                      Attr::Floats("variance", p.var), Attr::Float("offset", p.offset)};
  if (!p.maxs.empty()) a.push_back(Attr::Floats("max_size", p.maxs));
  if (!p.ars.empty()) a.push_back(Attr::Floats("aspect_ratio", p.ars));
  if (p.step > 0) a.push_back(Attr::Float("step", p.step));
  if (p.step_h > 0) a.push_back(Attr::Float("step_h", p.step_h));
  if (p.step_w > 0) a.push_back(Attr::Float("step_w", p.step_w));
  if (p.img_size_attr) a.push_back(Attr::Int("img_size", p.img_size_attr));
  b.add_node("PriorBox", {"f", "img"}, {"priors"}, a, "pb", "caffe", 1);
  b.add_output("priors");
  std::string backend;
  auto out = ssdtest::run(b, {Tensor(DataType::kFloat32, {1, 2, p.H, p.W}), Tensor(DataType::kFloat32, {1, 1, p.img_h, p.img_w})}, &backend);
  CHECK(backend == "ops_ssd");
  return std::move(out[0]);
}

}  // namespace

TEST_CASE("PriorBox matches Caffe's procedure over attribute combinations") {
  std::mt19937 g(11);
  std::uniform_int_distribution<int> dim(1, 7), coin(0, 1);
  std::uniform_real_distribution<float> sz(4, 30);
  for (int it = 0; it < 60; ++it) {
    PB p;
    p.H = dim(g); p.W = dim(g);
    p.img_h = 8 * dim(g) + 3; p.img_w = 8 * dim(g);
    p.mins.clear();
    for (int k = 0, n = 1 + it % 2; k < n; ++k) p.mins.push_back(sz(g));
    if (coin(g)) for (float m : p.mins) p.maxs.push_back(m + sz(g));
    const float choices[] = {2.f, 3.f, 0.5f, 1.f, 2.f};
    for (int k = 0, n = it % 4; k < n; ++k) p.ars.push_back(choices[(it + k) % 5]);
    p.flip = coin(g); p.clip = coin(g);
    p.var = coin(g) ? std::vector<float>{0.1f, 0.1f, 0.2f, 0.2f} : std::vector<float>{0.15f};
    int st = it % 4;
    if (st == 1) p.step = 8;
    if (st == 2) { p.step_h = 6; p.step_w = 10; }
    if (it % 7 == 0) p.img_size_attr = 50;
    p.offset = coin(g) ? 0.5f : 0.f;
    Tensor got = run_prior(p);
    std::vector<float> want = reference(p);
    REQUIRE(got.shape() == Shape{1, 2, int64_t(want.size() / 2)});
    float m = 0;
    for (size_t i = 0; i < want.size(); ++i) m = std::max(m, std::fabs(got.data<float>()[i] - want[i]));
    CAPTURE(it);
    CHECK(m < 1e-6f);
  }
}

TEST_CASE("known answer: the ssd_fmnist priors (3 PriorBox layers, concatenated)") {
  std::ifstream f(ssdtest::data_dir() + "priors_xyxy_norm_f32.bin", std::ios::binary);
  REQUIRE(f);
  std::vector<float> want(756 * 4);
  f.read(reinterpret_cast<char*>(want.data()), std::streamsize(want.size() * 4));
  REQUIRE(f.gcount() == std::streamsize(want.size() * 4));
  // priorbox.json: maps 12, 6, 3; steps 8, 16, 32; min 16, 36, 64; max 36, 64, 96;
  // aspect_ratio [2] with flip; no clip; offset 0.5; variances 0.1, 0.1, 0.2, 0.2; image 96.
  const int64_t maps[] = {12, 6, 3};
  const float steps[] = {8, 16, 32}, mins[] = {16, 36, 64}, maxs[] = {36, 64, 96};
  std::vector<float> got;
  std::vector<float> vars;
  for (int k = 0; k < 3; ++k) {
    PB p;
    p.H = p.W = maps[k];
    p.img_h = p.img_w = 96;
    p.mins = {mins[k]};
    p.maxs = {maxs[k]};
    p.ars = {2.f};
    p.step = steps[k];
    p.var = {0.1f, 0.1f, 0.2f, 0.2f};
    Tensor t = run_prior(p);
    const int64_t n = t.shape()[2];
    got.insert(got.end(), t.data<float>(), t.data<float>() + n);
    vars.insert(vars.end(), t.data<float>() + n, t.data<float>() + 2 * n);
  }
  REQUIRE(got.size() == want.size());
  float m = 0;
  for (size_t i = 0; i < want.size(); ++i) m = std::max(m, std::fabs(got[i] - want[i]));
  CHECK(m < 1e-6f);
  CHECK(vars[0] == doctest::Approx(0.1));
  CHECK(vars[3] == doctest::Approx(0.2));
}

TEST_CASE("bad PriorBox attributes give one clear error naming the node") {
  ModelBuilder b("pb");
  b.add_input("f", DataType::kFloat32, Shape{1, 2, 3, 3});
  b.add_input("img", DataType::kFloat32, Shape{1, 1, 30, 30});
  b.add_node("PriorBox", {"f", "img"}, {"priors"}, {Attr::Floats("min_size", {10}), Attr::Floats("max_size", {5})},
             "bad_priors", "caffe", 1);
  b.add_output("priors");
  std::string e = ssdtest::error_of(b, {Tensor(DataType::kFloat32, {1, 2, 3, 3}), Tensor(DataType::kFloat32, {1, 1, 30, 30})});
  CHECK(e.find("bad_priors") != std::string::npos);
  CHECK(e.find("max_size must be greater than min_size") != std::string::npos);
  ModelBuilder b2("pb");
  b2.add_input("f", DataType::kFloat32, Shape{1, 2, 3, 3});
  b2.add_input("img", DataType::kFloat32, Shape{1, 1, 30, 30});
  b2.add_node("PriorBox", {"f", "img"}, {"priors"}, {}, "no_sizes", "caffe", 1);
  b2.add_output("priors");
  CHECK(ssdtest::error_of(b2, {}).find("min_size is required") != std::string::npos);
}
