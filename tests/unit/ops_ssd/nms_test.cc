// ONNX NonMaxSuppression against a reference (repeatedly take the best remaining box,
// drop those overlapping it), known answers from the ONNX operator examples, and the
// padding convention of the planned output.
#include "ssd_test_util.h"

#include <algorithm>
#include <array>
#include <random>

using namespace minnow;

namespace {

struct Nms {
  int64_t B = 1, C = 1, S = 6;
  std::vector<float> boxes, scores;
  int64_t max_out = 3;
  float iou = 0.5f, score_thr = 0.f;
  bool has_max = true, has_iou = true, has_thr = true;
  int center = 0;
};

std::vector<std::array<int64_t, 3>> reference(const Nms& n) {
  std::vector<std::array<int64_t, 3>> out;
  auto corners = [&](int64_t b, int64_t i, double* x0, double* y0, double* x1, double* y1) {
    const float* v = &n.boxes[size_t((b * n.S + i) * 4)];
    if (n.center) {
      *x0 = v[0] - v[2] / 2.0; *x1 = v[0] + v[2] / 2.0; *y0 = v[1] - v[3] / 2.0; *y1 = v[1] + v[3] / 2.0;
    } else {
      *y0 = std::min(v[0], v[2]); *y1 = std::max(v[0], v[2]); *x0 = std::min(v[1], v[3]); *x1 = std::max(v[1], v[3]);
    }
  };
  auto iou = [&](int64_t b, int64_t i, int64_t j) {
    double a[4], c[4];
    corners(b, i, &a[0], &a[1], &a[2], &a[3]);
    corners(b, j, &c[0], &c[1], &c[2], &c[3]);
    double aa = (a[2] - a[0]) * (a[3] - a[1]), ca = (c[2] - c[0]) * (c[3] - c[1]);
    if (aa <= 0 || ca <= 0) return 0.0;
    double iw = std::min(a[2], c[2]) - std::max(a[0], c[0]), ih = std::min(a[3], c[3]) - std::max(a[1], c[1]);
    if (iw <= 0 || ih <= 0) return 0.0;
    return iw * ih / (aa + ca - iw * ih);
  };
  const int64_t max_out = n.has_max ? n.max_out : 0;
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t c = 0; c < n.C; ++c) {
      std::vector<int64_t> left;
      for (int64_t i = 0; i < n.S; ++i)
        if (!n.has_thr || n.scores[size_t((b * n.C + c) * n.S + i)] > n.score_thr) left.push_back(i);
      int64_t taken = 0;
      while (!left.empty() && taken < max_out) {
        auto best = left.begin();
        for (auto it = left.begin(); it != left.end(); ++it)
          if (n.scores[size_t((b * n.C + c) * n.S + *it)] > n.scores[size_t((b * n.C + c) * n.S + *best)]) best = it;
        const int64_t k = *best;
        out.push_back({b, c, k});
        ++taken;
        std::vector<int64_t> rest;
        for (int64_t i : left)
          if (i != k && iou(b, i, k) <= (n.has_iou ? n.iou : 0.0)) rest.push_back(i);
        left = rest;
      }
    }
  return out;
}

// Returns the selected rows (the output has exactly those: run-time dims), and the count.
std::vector<std::array<int64_t, 3>> run(const Nms& n, int64_t* planned = nullptr, bool const_params = true) {
  ModelBuilder b("nms");
  b.add_input("boxes", DataType::kFloat32, Shape{n.B, n.S, 4});
  b.add_input("scores", DataType::kFloat32, Shape{n.B, n.C, n.S});
  std::vector<Tensor> feeds{Tensor::from_vector<float>({n.B, n.S, 4}, n.boxes), Tensor::from_vector<float>({n.B, n.C, n.S}, n.scores)};
  std::vector<std::string> ins{"boxes", "scores", "", "", ""};
  auto param = [&](const std::string& name, Tensor t, int slot) {
    if (const_params) b.add_constant(name, t);
    else { b.add_input(name, t.dtype(), t.shape()); feeds.push_back(t); }
    ins[size_t(slot)] = name;
  };
  if (n.has_max) param("max", Tensor::from_vector<int64_t>({1}, {n.max_out}), 2);
  if (n.has_iou) param("iou", Tensor::from_vector<float>({1}, {n.iou}), 3);
  if (n.has_thr) param("thr", Tensor::from_vector<float>({1}, {n.score_thr}), 4);
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  b.add_node("NonMaxSuppression", ins, {"sel"}, {Attr::Int("center_point_box", n.center)}, "nms", "", 11);
  b.add_output("sel");
  std::string backend;
  auto out = ssdtest::run(b, feeds, &backend);
  CHECK(backend == "ops_ssd");
  const Tensor& t = out[0];
  REQUIRE(t.dtype() == DataType::kInt64);
  REQUIRE(t.shape().size() == 2);
  REQUIRE(t.shape()[1] == 3);
  if (planned) *planned = t.shape()[0];
  std::vector<std::array<int64_t, 3>> rows;
  for (int64_t r = 0; r < t.shape()[0]; ++r) {
    const int64_t* v = t.data<int64_t>() + 3 * r;
    CHECK(v[0] >= 0);
    rows.push_back({v[0], v[1], v[2]});
  }
  return rows;
}

Nms onnx_example() {
  Nms n;
  n.boxes = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
  n.scores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};
  return n;
}

}  // namespace

TEST_CASE("known answers (the ONNX operator's examples)") {
  Nms n = onnx_example();
  int64_t planned = 0;
  auto r = run(n, &planned);
  CHECK(planned == 3);
  CHECK(r == std::vector<std::array<int64_t, 3>>{{0, 0, 3}, {0, 0, 0}, {0, 0, 5}});
  // center_point_box = 1: the same boxes as centers and sizes.
  Nms c = n;
  c.center = 1;
  c.boxes = {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 0.4f, 1, 1, 0.5f, 10.5f, 1, 1, 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1};
  CHECK(run(c) == std::vector<std::array<int64_t, 3>>{{0, 0, 3}, {0, 0, 0}, {0, 0, 5}});
  // Score threshold 0.4 drops box 5: the bound is 3, the output has the 2 selected rows.
  Nms s = n;
  s.score_thr = 0.4f;
  CHECK(run(s, &planned) == std::vector<std::array<int64_t, 3>>{{0, 0, 3}, {0, 0, 0}});
  CHECK(planned == 2);
  CHECK(run(s, &planned, false).size() == 2);  // the same with the thresholds as graph inputs
  CHECK(planned == 2);
  // max_output_boxes_per_class 2.
  Nms m = n;
  m.max_out = 2;
  CHECK(run(m) == std::vector<std::array<int64_t, 3>>{{0, 0, 3}, {0, 0, 0}});
  // No max given: selects nothing.
  Nms z = n;
  z.has_max = false;
  CHECK(run(z, &planned).empty());
  CHECK(planned == 0);
}

TEST_CASE("NonMaxSuppression matches the reference over random boxes") {
  std::mt19937 g(8);
  std::uniform_real_distribution<float> u(0, 1), sz(0.05f, 0.5f);
  for (int it = 0; it < 80; ++it) {
    Nms n;
    n.B = 1 + it % 3;
    n.C = 1 + it % 4;
    n.S = 1 + (it * 5) % 19;
    n.center = it % 2;
    for (int64_t i = 0; i < n.B * n.S; ++i) {
      float a = std::round(u(g) * 4) / 4, b = std::round(u(g) * 4) / 4, w = sz(g), h = sz(g);
      if (n.center) n.boxes.insert(n.boxes.end(), {a, b, w, h});
      else if (i % 2) n.boxes.insert(n.boxes.end(), {a, b, a + h, b + w});
      else n.boxes.insert(n.boxes.end(), {a + h, b + w, a, b});  // flipped corners
    }
    for (int64_t i = 0; i < n.B * n.C * n.S; ++i) n.scores.push_back(std::round(u(g) * 50) / 50);  // some ties
    n.max_out = it % 5 == 0 ? 100 : 1 + it % 4;
    n.iou = 0.1f * float(it % 8);
    n.has_thr = it % 3 != 0;
    n.score_thr = 0.3f;
    n.has_iou = it % 7 != 0;
    CAPTURE(it);
    CHECK(run(n, nullptr, it % 2 == 0) == reference(n));
  }
}

TEST_CASE("bad NonMaxSuppression inputs give one clear error naming the node") {
  ModelBuilder b("nms");
  b.add_input("boxes", DataType::kFloat32, Shape{1, 5, 4});
  b.add_input("scores", DataType::kFloat32, Shape{1, 1, 6});
  b.add_node("NonMaxSuppression", {"boxes", "scores"}, {"sel"}, {}, "nms_bad", "", 11);
  b.add_output("sel");
  std::string e = ssdtest::error_of(b, {});
  CHECK(e.find("nms_bad") != std::string::npos);
  CHECK(e.find("disagree on the number of boxes") != std::string::npos);
}
