// Shared helpers for the unit tests: random tensors, small models built in code, and a
// naive evaluation of them written independently of any kernel.
#pragma once

#include <minnow/minnow.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <random>
#include <string>
#include <vector>

namespace minnow {
namespace test {

inline Tensor random_tensor(Shape shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.elements(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

inline float max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  float m = 0;
  for (int64_t i = 0; i < a.elements(); ++i) m = std::max(m, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

inline std::string plugin_dir() { return MINNOW_TEST_PLUGIN_DIR; }            // build/lib/minnow/plugins
#ifdef MINNOW_TEST_EXTRA_PLUGIN_DIR  // only the suites that build test plugins define it
inline std::string test_plugin_dir() { return MINNOW_TEST_EXTRA_PLUGIN_DIR; }  // build/tests/plugins
#endif

// Engine with exactly the build's plugins (no environment, no install folder).
inline std::shared_ptr<Engine> make_engine(std::vector<std::string> extra = {}) {
  EngineOptions o;
  o.plugin_paths = {plugin_dir()};
  for (auto& e : extra) o.plugin_paths.push_back(e);
  o.use_environment = false;
  o.use_default_folder = false;
  auto e = Engine::create(o);
  if (!e) throw std::runtime_error(e.status().message());
  return e.value();
}

// MLP 784-300-100-10 (as LeNet-300-100): Flatten, Gemm(transB) + Relu, twice, Gemm.
struct Mlp {
  Tensor w1, b1, w2, b2, w3, b3;
  explicit Mlp(uint64_t seed, int64_t in = 784, int64_t h1 = 300, int64_t h2 = 100, int64_t out = 10)
      : w1(random_tensor({h1, in}, seed, -0.1f, 0.1f)), b1(random_tensor({h1}, seed + 1)),
        w2(random_tensor({h2, h1}, seed + 2, -0.1f, 0.1f)), b2(random_tensor({h2}, seed + 3)),
        w3(random_tensor({out, h2}, seed + 4, -0.1f, 0.1f)), b3(random_tensor({out}, seed + 5)) {}

  ModelBuilder builder(bool symbolic_batch = false) const {
    ModelBuilder b("mlp");
    int64_t in = w1.shape()[1];
    if (symbolic_batch) b.add_input("input", DataType::kFloat32, std::vector<ir::Dim>{{-1, "N"}, {1, ""}, {in, ""}});
    else b.add_input("input", DataType::kFloat32, Shape{1, 1, in});
    b.add_constant("w1", w1); b.add_constant("b1", b1);
    b.add_constant("w2", w2); b.add_constant("b2", b2);
    b.add_constant("w3", w3); b.add_constant("b3", b3);
    b.add_node("Flatten", {"input"}, {"flat"}, {Attr::Int("axis", 1)});
    b.add_node("Gemm", {"flat", "w1", "b1"}, {"h1"}, {Attr::Int("transB", 1)});
    b.add_node("Relu", {"h1"}, {"a1"});
    b.add_node("Gemm", {"a1", "w2", "b2"}, {"h2"}, {Attr::Int("transB", 1)});
    b.add_node("Relu", {"h2"}, {"a2"});
    b.add_node("Gemm", {"a2", "w3", "b3"}, {"logits"}, {Attr::Int("transB", 1)});
    b.add_output("logits");
    return b;
  }

  static std::vector<float> dense(const std::vector<float>& x, const Tensor& w, const Tensor& b, bool relu) {
    int64_t out = w.shape()[0], in = w.shape()[1];
    std::vector<float> y(out);
    for (int64_t o = 0; o < out; ++o) {
      double s = b.data<float>()[o];
      for (int64_t i = 0; i < in; ++i) s += double(w.data<float>()[o * in + i]) * x[i];
      y[o] = relu && s < 0 ? 0.f : float(s);
    }
    return y;
  }

  // Naive evaluation of one sample.
  std::vector<float> eval(const float* x) const {
    std::vector<float> v(x, x + w1.shape()[1]);
    v = dense(v, w1, b1, true);
    v = dense(v, w2, b2, true);
    return dense(v, w3, b3, false);
  }
};

// Small CNN: Conv(1->4, 3x3, pad 1) + Relu -> MaxPool 2x2 -> Conv(4->6, 3x3, stride 2, group 2)
// -> Add(bias-like constant, broadcast) -> Relu -> Reshape -> Gemm -> Softmax.
struct Cnn {
  Tensor w1, b1, w2, c, wf, bf;
  Cnn(uint64_t seed)
      : w1(random_tensor({4, 1, 3, 3}, seed)), b1(random_tensor({4}, seed + 1)),
        w2(random_tensor({6, 2, 3, 3}, seed + 2)), c(random_tensor({1, 6, 1, 1}, seed + 3)),
        wf(random_tensor({6 * 3 * 3, 5}, seed + 4, -0.3f, 0.3f)), bf(random_tensor({5}, seed + 5)) {}

  ModelBuilder builder() const {
    ModelBuilder b("cnn");
    b.add_input("image", DataType::kFloat32, Shape{1, 1, 12, 12});
    b.add_constant("w1", w1); b.add_constant("b1", b1); b.add_constant("w2", w2);
    b.add_constant("c", c); b.add_constant("wf", wf); b.add_constant("bf", bf);
    b.add_constant("shape", Tensor::from_vector<int64_t>({2}, {1, 54}));
    b.add_node("Conv", {"image", "w1", "b1"}, {"c1"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 1, 1, 1})});
    b.add_node("Relu", {"c1"}, {"r1"});
    b.add_node("MaxPool", {"r1"}, {"p1"}, {Attr::Ints("kernel_shape", {2, 2}), Attr::Ints("strides", {2, 2})});
    b.add_node("Conv", {"p1", "w2", ""}, {"c2"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("strides", {2, 2}), Attr::Int("group", 2), Attr::Ints("pads", {1, 1, 1, 1})});
    b.add_node("Add", {"c2", "c"}, {"a2"});
    b.add_node("Relu", {"a2"}, {"r2"});
    b.add_node("Reshape", {"r2", "shape"}, {"flat"});
    b.add_node("Gemm", {"flat", "wf", "bf"}, {"fc"});
    b.add_node("Softmax", {"fc"}, {"prob"}, {Attr::Int("axis", 1)});
    b.add_output("prob");
    return b;
  }

  // Naive evaluation (direct loops from the definitions).
  std::vector<float> eval(const float* x) const {
    auto conv = [](const std::vector<float>& in, int C, int H, int W, const Tensor& w, const float* bias, int stride,
                   int pad, int group, int* OH, int* OW) {
      int O = int(w.shape()[0]), CG = int(w.shape()[1]), K = int(w.shape()[2]);
      *OH = (H + 2 * pad - K) / stride + 1;
      *OW = (W + 2 * pad - K) / stride + 1;
      std::vector<float> out(size_t(O) * *OH * *OW);
      int opg = O / group;
      for (int o = 0; o < O; ++o)
        for (int y = 0; y < *OH; ++y)
          for (int xo = 0; xo < *OW; ++xo) {
            double s = bias ? bias[o] : 0;
            int g = o / opg;
            for (int ci = 0; ci < CG; ++ci)
              for (int ky = 0; ky < K; ++ky)
                for (int kx = 0; kx < K; ++kx) {
                  int iy = y * stride - pad + ky, ix = xo * stride - pad + kx;
                  if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
                  s += double(in[(size_t(g * CG + ci) * H + iy) * W + ix]) * w.data<float>()[((size_t(o) * CG + ci) * K + ky) * K + kx];
                }
            out[(size_t(o) * *OH + y) * *OW + xo] = float(s);
          }
      (void)C;
      return out;
    };
    int H, W;
    std::vector<float> v(x, x + 144);
    v = conv(v, 1, 12, 12, w1, b1.data<float>(), 1, 1, 1, &H, &W);
    for (float& f : v) f = std::max(f, 0.f);
    std::vector<float> p(size_t(4) * 6 * 6);
    for (int ch = 0; ch < 4; ++ch)
      for (int y = 0; y < 6; ++y)
        for (int xx = 0; xx < 6; ++xx) {
          float m = -INFINITY;
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) m = std::max(m, v[(size_t(ch) * 12 + 2 * y + dy) * 12 + 2 * xx + dx]);
          p[(size_t(ch) * 6 + y) * 6 + xx] = m;
        }
    v = conv(p, 4, 6, 6, w2, nullptr, 2, 1, 2, &H, &W);  // -> 6x3x3
    for (int ch = 0; ch < 6; ++ch)
      for (int k = 0; k < 9; ++k) v[ch * 9 + k] = std::max(v[ch * 9 + k] + c.data<float>()[ch], 0.f);
    std::vector<float> fc(5);
    for (int o = 0; o < 5; ++o) {
      double s = bf.data<float>()[o];
      for (int i = 0; i < 54; ++i) s += double(v[i]) * wf.data<float>()[i * 5 + o];
      fc[o] = float(s);
    }
    float mx = *std::max_element(fc.begin(), fc.end());
    double z = 0;
    for (float& f : fc) z += std::exp(double(f - mx));
    for (float& f : fc) f = float(std::exp(double(f - mx)) / z);
    return fc;
  }
};

}  // namespace test
}  // namespace minnow
