// Layer conversions checked numerically against plain re-implementations of Caffe's own
// forward passes (written here from Caffe's layer code, not from our kernels).
#include "caffe_test_util.h"

#include <cctype>
#include <cmath>
#include <random>

using namespace minnow;
using namespace minnow::caffe_test;

namespace {

// Caffe PoolingLayer::Forward_cpu (MAX / AVE) including its output-size rule.
std::vector<float> caffe_pool(const Tensor& x, int k, int s, int pad, bool max, Shape* out_shape) {
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  auto pooled = [&](int64_t in) {
    int64_t p = static_cast<int64_t>(std::ceil(static_cast<float>(in + 2 * pad - k) / s)) + 1;
    if (pad && (p - 1) * s >= in + pad) --p;
    return p;
  };
  int64_t ph = pooled(h), pw = pooled(w);
  *out_shape = {n, c, ph, pw};
  std::vector<float> y;
  const float* xp = x.data<float>();
  for (int64_t nc = 0; nc < n * c; ++nc)
    for (int64_t oy = 0; oy < ph; ++oy)
      for (int64_t ox = 0; ox < pw; ++ox) {
        int64_t hs = oy * s - pad, ws = ox * s - pad;
        if (max) {
          int64_t he = std::min(hs + k, h), we = std::min(ws + k, w);
          hs = std::max<int64_t>(hs, 0), ws = std::max<int64_t>(ws, 0);
          float m = -FLT_MAX;
          for (int64_t i = hs; i < he; ++i)
            for (int64_t j = ws; j < we; ++j) m = std::max(m, xp[nc * h * w + i * w + j]);
          y.push_back(m);
        } else {
          int64_t he = std::min(hs + k, h + pad), we = std::min(ws + k, w + pad);
          int64_t size = (he - hs) * (we - ws);
          hs = std::max<int64_t>(hs, 0), ws = std::max<int64_t>(ws, 0);
          he = std::min(he, h), we = std::min(we, w);
          float sum = 0;
          for (int64_t i = hs; i < he; ++i)
            for (int64_t j = ws; j < we; ++j) sum += xp[nc * h * w + i * w + j];
          y.push_back(sum / size);
        }
      }
  return y;
}

std::string pool_net(int64_t h, int64_t w, int k, int s, int pad, bool max) {
  return "input: \"data\" input_dim: 2 input_dim: 3 input_dim: " + std::to_string(h) + " input_dim: " + std::to_string(w) +
         "\nlayer { name: \"pool\" type: \"Pooling\" bottom: \"data\" top: \"pool\" pooling_param { pool: " +
         (max ? "MAX" : "AVE") + " kernel_size: " + std::to_string(k) + " stride: " + std::to_string(s) +
         " pad: " + std::to_string(pad) + " } }";
}

}  // namespace

TEST_CASE("Pooling reproduces Caffe's ceil rounding and its edge correction") {
  struct P {
    int64_t h, w;
    int k, s, pad;
  } cases[] = {{6, 7, 3, 2, 1}, {5, 5, 2, 2, 1}, {7, 9, 3, 2, 0}, {13, 11, 3, 3, 2}, {4, 4, 2, 2, 0}, {9, 6, 5, 4, 2},
               {12, 12, 2, 2, 0}, {3, 3, 3, 1, 1}};
  for (const auto& p : cases)
    for (bool max : {true, false}) {
      INFO("h=" << p.h << " w=" << p.w << " k=" << p.k << " s=" << p.s << " pad=" << p.pad << " max=" << max);
      Tensor x = test::random_tensor({2, 3, p.h, p.w}, 11);
      Shape want_shape;
      auto want = caffe_pool(x, p.k, p.s, p.pad, max, &want_shape);
      auto y = import_and_run(pool_net(p.h, p.w, p.k, p.s, p.pad, max), {}, {x});
      REQUIRE(y.size() == 1);
      CHECK(y[0].shape() == want_shape);
      CHECK(max_diff(y[0], want) < 1e-6f);
    }
}

TEST_CASE("Pooling: a window wholly outside the input is refused; global pooling") {
  CHECK(contains(import_error(pool_net(5, 5, 1, 3, 0, true), nullptr), "entirely outside the input"));
  Tensor x = test::random_tensor({1, 2, 3, 4}, 5);
  auto y = import_and_run(R"(input: "d" input_dim: 1 input_dim: 2 input_dim: 3 input_dim: 4
      layer { name: "g" type: "Pooling" bottom: "d" top: "g" pooling_param { pool: AVE global_pooling: true } })",
                          {}, {x});
  REQUIRE(y[0].shape() == Shape{1, 2, 1, 1});
  for (int c = 0; c < 2; ++c) {
    double s = 0;
    for (int i = 0; i < 12; ++i) s += x.data<float>()[c * 12 + i];
    CHECK(y[0].data<float>()[c] == doctest::Approx(s / 12).epsilon(1e-6));
  }
}

TEST_CASE("Convolution: group, dilation, pad_h / pad_w, stride_h / stride_w, several bottoms") {
  const int64_t n = 1, cin = 4, h = 9, w = 8, cout = 6, g = 2, kh = 3, kw = 2;
  WeightMap wm;
  wm["conv"].blobs = {make_blob({cout, cin / g, kh, kw}, 1), make_blob({cout}, 2)};
  std::string net = R"(input: "a" input_dim: 1 input_dim: 4 input_dim: 9 input_dim: 8
    input: "b" input_dim: 1 input_dim: 4 input_dim: 9 input_dim: 8
    layer { name: "conv" type: "Convolution" bottom: "a" bottom: "b" top: "ya" top: "yb"
      convolution_param { num_output: 6 group: 2 kernel_h: 3 kernel_w: 2 pad_h: 2 pad_w: 1 stride_h: 2 stride_w: 1 dilation: 2 } })";
  Tensor a = test::random_tensor({n, cin, h, w}, 3), b = test::random_tensor({n, cin, h, w}, 4);
  auto y = import_and_run(net, wm, {a, b});
  REQUIRE(y.size() == 2);
  const int64_t ph = 2, pw = 1, sh = 2, sw = 1, d = 2;
  const int64_t oh = (h + 2 * ph - (d * (kh - 1) + 1)) / sh + 1, ow = (w + 2 * pw - (d * (kw - 1) + 1)) / sw + 1;
  for (int which = 0; which < 2; ++which) {
    const Tensor& x = which ? b : a;
    std::vector<float> want;
    const auto& W = wm["conv"].blobs[0].data;
    const auto& B = wm["conv"].blobs[1].data;
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = B[o];
          int64_t grp = o / (cout / g);
          for (int64_t ci = 0; ci < cin / g; ++ci)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t iy = oy * sh - ph + ky * d, ix = ox * sw - pw + kx * d;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                s += double(W[((o * (cin / g) + ci) * kh + ky) * kw + kx]) *
                     x.data<float>()[((grp * (cin / g) + ci) * h + iy) * w + ix];
              }
          want.push_back(static_cast<float>(s));
        }
    CHECK(y[which].shape() == Shape{n, cout, oh, ow});
    CHECK(max_diff(y[which], want) < 1e-5f);
  }
}

TEST_CASE("InnerProduct: axis 2 keeps leading axes; transpose; legacy 4-D weight shape") {
  WeightMap wm;
  CaffeBlob wgt = make_blob({1, 1, 5, 12}, 7);  // legacy shape of a [N=5, K=12] weight
  wm["ip"].blobs = {wgt, make_blob({5}, 8)};
  wm["ipt"].blobs = {make_blob({3, 4}, 9)};  // transpose: true stores [K=3, N=4]
  std::string net = R"(input: "x" input_dim: 2 input_dim: 3 input_dim: 4 input_dim: 3
    layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y" inner_product_param { num_output: 5 axis: 2 } }
    layer { name: "ipt" type: "InnerProduct" bottom: "x" top: "z"
            inner_product_param { num_output: 4 axis: -1 transpose: true bias_term: false } })";
  Tensor x = test::random_tensor({2, 3, 4, 3}, 10);
  auto y = import_and_run(net, wm, {x});
  REQUIRE(y.size() == 2);
  CHECK(y[0].shape() == Shape{2, 3, 5});
  CHECK(y[1].shape() == Shape{2, 3, 4, 4});
  std::vector<float> want0, want1;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t o = 0; o < 5; ++o) {
      double s = wm["ip"].blobs[1].data[o];
      for (int64_t k = 0; k < 12; ++k) s += double(wgt.data[o * 12 + k]) * x.data<float>()[r * 12 + k];
      want0.push_back(static_cast<float>(s));
    }
  for (int64_t r = 0; r < 24; ++r)
    for (int64_t o = 0; o < 4; ++o) {
      double s = 0;
      for (int64_t k = 0; k < 3; ++k) s += double(wm["ipt"].blobs[0].data[k * 4 + o]) * x.data<float>()[r * 3 + k];
      want1.push_back(static_cast<float>(s));
    }
  CHECK(max_diff(y[0], want0) < 1e-5f);
  CHECK(max_diff(y[1], want1) < 1e-5f);
}

TEST_CASE("BatchNorm + Scale become one BatchNormalization with Caffe's arithmetic") {
  WeightMap wm;
  CaffeBlob mean = make_blob({3}, 1), var = make_blob({3}, 2, 0.5f, 2.f), factor{{1}, {4.f}};
  wm["bn"].blobs = {mean, var, factor};
  wm["sc"].blobs = {make_blob({3}, 3), make_blob({3}, 4)};
  std::string net = R"(input: "data" input_dim: 2 input_dim: 3 input_dim: 2 input_dim: 2
    layer { name: "bn" type: "BatchNorm" bottom: "data" top: "x" batch_norm_param { eps: 0.001 } }
    layer { name: "sc" type: "Scale" bottom: "x" top: "x" scale_param { bias_term: true } })";
  auto model = load(import(net, wm));
  REQUIRE(model->graph().nodes.size() == 1);
  CHECK(model->graph().nodes[0].op == "BatchNormalization");
  CHECK(model->graph().tensors[model->graph().outputs[0]].name == "x");
  Tensor x = test::random_tensor({2, 3, 2, 2}, 5);
  auto y = run(model, {x});
  std::vector<float> want;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 4; ++i) {
        double m = mean.data[c] / 4.0, v = var.data[c] / 4.0;
        double xn = (x.data<float>()[(n * 3 + c) * 4 + i] - m) / std::sqrt(v + 0.001);
        want.push_back(static_cast<float>(xn * wm["sc"].blobs[0].data[c] + wm["sc"].blobs[1].data[c]));
      }
  CHECK(max_diff(y[0], want) < 1e-5f);

  // A Scale whose input is also read elsewhere stays separate (and still computes the same).
  std::string net2 = R"(input: "x" input_dim: 2 input_dim: 3 input_dim: 2 input_dim: 2
    layer { name: "bn" type: "BatchNorm" bottom: "x" top: "b" batch_norm_param { eps: 0.001 } }
    layer { name: "sc" type: "Scale" bottom: "b" top: "s" scale_param { bias_term: true } }
    layer { name: "add" type: "Eltwise" bottom: "b" bottom: "s" top: "sum" })";
  auto m2 = load(import(net2, wm));
  CHECK(m2->graph().nodes.size() == 4);  // BatchNormalization, Mul, Add, Add
}

TEST_CASE("Eltwise SUM with coeffs, PROD, MAX; Power; PReLU; ReLU slope") {
  WeightMap wm;
  wm["pr"].blobs = {make_blob({3}, 6)};
  std::string net = R"(input: "a" input_dim: 1 input_dim: 3 input_dim: 2 input_dim: 2
    input: "b" input_dim: 1 input_dim: 3 input_dim: 2 input_dim: 2
    layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "sum" eltwise_param { operation: SUM coeff: 0.5 coeff: -1 } }
    layer { name: "prod" type: "Eltwise" bottom: "a" bottom: "b" bottom: "a" top: "prod" eltwise_param { operation: PROD } }
    layer { name: "max" type: "Eltwise" bottom: "a" bottom: "b" top: "max" eltwise_param { operation: MAX } }
    layer { name: "pow" type: "Power" bottom: "a" top: "pow" power_param { power: 2 scale: 3 shift: 1 } }
    layer { name: "pr" type: "PReLU" bottom: "a" top: "pr" }
    layer { name: "lr" type: "ReLU" bottom: "b" top: "lr" relu_param { negative_slope: 0.1 } })";
  Tensor a = test::random_tensor({1, 3, 2, 2}, 1), b = test::random_tensor({1, 3, 2, 2}, 2);
  auto y = import_and_run(net, wm, {a, b});
  REQUIRE(y.size() == 6);
  std::vector<float> w[6];
  for (int i = 0; i < 12; ++i) {
    float x = a.data<float>()[i], z = b.data<float>()[i];
    w[0].push_back(0.5f * x - z);
    w[1].push_back(x * z * x);
    w[2].push_back(std::max(x, z));
    w[3].push_back((1 + 3 * x) * (1 + 3 * x));
    w[4].push_back(x > 0 ? x : x * wm["pr"].blobs[0].data[i / 4]);
    w[5].push_back(z > 0 ? z : 0.1f * z);
  }
  for (int k = 0; k < 6; ++k) {
    INFO("output " << k);
    CHECK(max_diff(y[k], w[k]) < 1e-5f);
  }
}

TEST_CASE("Reshape 0 / -1, Flatten axes, Permute, Concat, Split and Dropout aliases") {
  std::string net = R"(input: "x" input_dim: 2 input_dim: 6 input_dim: 2 input_dim: 3
    layer { name: "cat" type: "Concat" bottom: "x" bottom: "x" top: "cat" concat_param { axis: 3 } }
    layer { name: "perm" type: "Permute" bottom: "cat" top: "perm" permute_param { order: 0 order: 2 } }
    layer { name: "rs" type: "Reshape" bottom: "perm" top: "rs" reshape_param { shape { dim: 0 dim: -1 dim: 3 } } }
    layer { name: "fl" type: "Flatten" bottom: "x" top: "fl" flatten_param { axis: 2 } }
    layer { name: "sp" type: "Split" bottom: "fl" top: "fa" top: "fb" }
    layer { name: "drop" type: "Dropout" bottom: "fa" top: "drop" }
    layer { name: "sum" type: "Eltwise" bottom: "drop" bottom: "fb" top: "twice" })";
  Tensor x = test::random_tensor({2, 6, 2, 3}, 12);
  auto m = load(import(net, {}));
  for (const auto& n : m->graph().nodes) CHECK(n.op != "Identity");  // Split / Dropout are free
  auto y = run(m, {x});
  REQUIRE(y.size() == 2);
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w) { return x.data<float>()[((n * 6 + c) * 2 + h) * 3 + w]; };
  // cat [2, 6, 2, 6] (x twice along W); perm [N, H, C, W] = [2, 2, 6, 6]; rs [2, -1, 3] = [2, 24, 3]
  CHECK(y[0].shape() == Shape{2, 24, 3});
  std::vector<float> want;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t c = 0; c < 6; ++c)
        for (int64_t w = 0; w < 6; ++w) want.push_back(at(n, c, h, w % 3));
  CHECK(max_diff(y[0], want) == 0.f);
  // twice = 2 * flatten(x, axis 2) = [2, 6, 6]
  CHECK(y[1].shape() == Shape{2, 6, 6});
  std::vector<float> want2;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 6; ++c)
      for (int64_t i = 0; i < 6; ++i) want2.push_back(2 * at(n, c, i / 3, i % 3));
  CHECK(max_diff(y[1], want2) < 1e-6f);
}

TEST_CASE("Slice with slice_point and with an even split") {
  std::string net = R"(input: "x" input_dim: 2 input_dim: 6 input_dim: 2 input_dim: 3
    layer { name: "sl" type: "Slice" bottom: "x" top: "s0" top: "s1" top: "s2" slice_param { axis: 1 slice_point: 1 slice_point: 4 } }
    layer { name: "even" type: "Slice" bottom: "x" top: "e0" top: "e1" slice_param { slice_dim: 2 } })";
  CHECK(contains(import_error(R"(input: "x" input_dim: 2 input_dim: 6 input_dim: 2 input_dim: 3
    layer { name: "bad" type: "Slice" bottom: "x" top: "a" top: "b" slice_param { axis: 3 } })", nullptr),
                 "does not split evenly"));
  if (!split_available()) {
    MESSAGE("SKIPPED running: no loaded backend runs Split yet (Caffe Slice)");
    return;
  }
  Tensor x = test::random_tensor({2, 6, 2, 3}, 12);
  auto y = import_and_run(net, {}, {x});
  REQUIRE(y.size() == 5);
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w) { return x.data<float>()[((n * 6 + c) * 2 + h) * 3 + w]; };
  const int64_t from[3] = {0, 1, 4}, size[3] = {1, 3, 2};
  for (int k = 0; k < 3; ++k) {
    CHECK(y[k].shape() == Shape{2, size[k], 2, 3});
    std::vector<float> want;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < size[k]; ++c)
        for (int64_t i = 0; i < 6; ++i) want.push_back(at(n, from[k] + c, i / 3, i % 3));
    CHECK(max_diff(y[k], want) == 0.f);
  }
  CHECK(y[3].shape() == Shape{2, 6, 1, 3});
}

TEST_CASE("Normalize (caffe domain, ops_caffe plugin) matches SSD's NormalizeLayer") {
  for (bool across : {true, false})
    for (bool shared : {true, false}) {
      INFO("across_spatial=" << across << " channel_shared=" << shared);
      WeightMap wm;
      wm["norm"].blobs = {make_blob({shared ? 1 : 5}, 3, 1.f, 20.f)};
      std::string net = std::string(R"(input: "x" input_dim: 2 input_dim: 5 input_dim: 3 input_dim: 4
        layer { name: "norm" type: "Normalize" bottom: "x" top: "y" norm_param { across_spatial: )") +
                        (across ? "true" : "false") + " channel_shared: " + (shared ? "true" : "false") + " eps: 1e-6 } }";
      Tensor x = test::random_tensor({2, 5, 3, 4}, 4);
      auto y = import_and_run(net, wm, {x});
      const auto& sc = wm["norm"].blobs[0].data;
      std::vector<float> want(x.elements());
      for (int n = 0; n < 2; ++n) {
        double total = 0;
        for (int i = 0; i < 60; ++i) total += double(x.data<float>()[n * 60 + i]) * x.data<float>()[n * 60 + i];
        for (int c = 0; c < 5; ++c)
          for (int p = 0; p < 12; ++p) {
            double ss = 0;
            for (int k = 0; k < 5; ++k) ss += std::pow(double(x.data<float>()[n * 60 + k * 12 + p]), 2);
            double norm = std::sqrt((across ? total : ss) + 1e-6);
            want[n * 60 + c * 12 + p] = static_cast<float>(x.data<float>()[n * 60 + c * 12 + p] / norm * sc[shared ? 0 : c]);
          }
      }
      CHECK(max_diff(y[0], want) < 1e-5f);
    }
}

TEST_CASE("caffe-domain layers get Caffe's shapes and attributes") {
  std::string net = R"(input: "data" input_dim: 1 input_dim: 3 input_dim: 60 input_dim: 80
    input: "feat" input_dim: 1 input_dim: 8 input_dim: 5 input_dim: 4
    layer { name: "pb" type: "PriorBox" bottom: "feat" bottom: "data" top: "pb"
      prior_box_param { min_size: 10 max_size: 20 aspect_ratio: 2 aspect_ratio: 2.0000001 flip: true clip: true
                        variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 step: 16 } })";
  auto m = load(import(net, {}));
  const auto& g = m->graph();
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].domain == "caffe");
  CHECK(g.nodes[0].op == "PriorBox");
  REQUIRE(g.nodes[0].attr("step_h"));
  CHECK(g.nodes[0].attr("step_h")->f == 16.f);
  CHECK(g.nodes[0].attr("aspect_ratio")->floats.size() == 2);
}

TEST_CASE("import errors: unsupported types listed at once, weights, bottoms, options") {
  std::string net = R"(input: "x" input_dim: 1 input_dim: 2 input_dim: 3 input_dim: 3
    layer { name: "a" type: "Foo" bottom: "x" top: "a" }
    layer { name: "b" type: "ReLU" bottom: "a" top: "b" }
    layer { name: "c" type: "Bar" bottom: "b" top: "c" }
    layer { name: "d" type: "Foo" bottom: "c" top: "d" })";
  std::string e = import_error(net, nullptr);
  CHECK(contains(e, "unsupported Caffe layer types: Foo (layers 'a', 'd'); Bar (layer 'c')"));

  std::string conv = R"(input: "x" input_dim: 1 input_dim: 2 input_dim: 3 input_dim: 3
    layer { name: "conv" type: "Convolution" bottom: "x" top: "y" convolution_param { num_output: 4 kernel_size: 3 } })";
  CHECK(contains(import_error(conv, nullptr), "layer 'conv' (Convolution): needs weights"));
  WeightMap none;
  CHECK(contains(import_error(conv, &none), "test.caffemodel has no layer of that name"));
  WeightMap wrong;
  wrong["conv"].blobs = {make_blob({4, 2, 3, 2}, 1), make_blob({4}, 2)};
  CHECK(contains(import_error(conv, &wrong), "the weight (blob 0 in test.caffemodel) has shape [4,2,3,2]"));
  CHECK(contains(import_error(R"(input: "x" input_dim: 1 input_dim: 2 input_dim: 3 input_dim: 3
    layer { name: "r" type: "ReLU" bottom: "nope" top: "y" })", nullptr),
                 "bottom 'nope' is not produced"));
  caffe::ImportOptions bad;
  bad.input_shapes["other"] = {1, 2};
  CHECK(contains(import_error(conv, &wrong, bad), "no input 'other'"));
  CHECK(contains(import_error(R"(layer { name: "d" type: "Data" top: "x" } layer { name: "r" type: "ReLU" bottom: "x" top: "y" })", nullptr),
                 "declares no input"));
}

TEST_CASE("outputs keep Caffe blob names through in-place layers; V1 prototxt with V1 weights") {
  WeightMap wm;
  wm["ip"].blobs = {make_blob({2, 4}, 1), make_blob({2}, 2)};
  std::string v1 = R"(input: "data" input_dim: 1 input_dim: 1 input_dim: 2 input_dim: 2
    layers { name: "ip" type: INNER_PRODUCT bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
    layers { name: "relu" type: RELU bottom: "ip" top: "ip" }
    layers { name: "drop" type: DROPOUT bottom: "ip" top: "ip" })";
  auto m = load(import(v1, wm));
  REQUIRE(m->graph().outputs.size() == 1);
  CHECK(m->graph().tensors[m->graph().outputs[0]].name == "ip");
  Tensor x = test::random_tensor({1, 1, 2, 2}, 3);
  auto y = run(m, {x});
  for (int o = 0; o < 2; ++o) {
    double s = wm["ip"].blobs[1].data[o];
    for (int k = 0; k < 4; ++k) s += double(wm["ip"].blobs[0].data[o * 4 + k]) * x.data<float>()[k];
    CHECK(y[0].data<float>()[o] == doctest::Approx(std::max(0.0, s)).epsilon(1e-5));
  }
}

TEST_CASE("Deconvolution becomes ConvTranspose with Caffe's output size and weight layout") {
  const int64_t cin = 4, h = 3, w = 4, cout = 6, g = 2, k = 3, s = 2, p = 1;
  WeightMap wm;
  wm["up"].blobs = {make_blob({cin, cout / g, k, k}, 1), make_blob({cout}, 2)};
  std::string net = R"(input: "x" input_dim: 1 input_dim: 4 input_dim: 3 input_dim: 4
    layer { name: "up" type: "Deconvolution" bottom: "x" top: "y"
            convolution_param { num_output: 6 group: 2 kernel_size: 3 stride: 2 pad: 1 } })";
  auto m = load(import(net, wm));
  REQUIRE(m->graph().nodes.size() == 1);
  CHECK(m->graph().nodes[0].op == "ConvTranspose");
  Tensor x = test::random_tensor({1, cin, h, w}, 3);
  auto y = run(m, {x});
  const int64_t oh = s * (h - 1) + k - 2 * p, ow = s * (w - 1) + k - 2 * p;
  REQUIRE(y[0].shape() == Shape{1, cout, oh, ow});
  std::vector<double> acc(cout * oh * ow);
  for (int64_t o = 0; o < cout; ++o)
    for (int64_t i = 0; i < oh * ow; ++i) acc[o * oh * ow + i] = wm["up"].blobs[1].data[o];
  const auto& W = wm["up"].blobs[0].data;
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t iy = 0; iy < h; ++iy)
      for (int64_t ix = 0; ix < w; ++ix)
        for (int64_t oo = 0; oo < cout / g; ++oo)
          for (int64_t ky = 0; ky < k; ++ky)
            for (int64_t kx = 0; kx < k; ++kx) {
              int64_t oy = iy * s - p + ky, ox = ix * s - p + kx;
              if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
              int64_t o = (c / (cin / g)) * (cout / g) + oo;
              acc[(o * oh + oy) * ow + ox] += double(W[((c * (cout / g) + oo) * k + ky) * k + kx]) * x.data<float>()[(c * h + iy) * w + ix];
            }
  std::vector<float> want(acc.begin(), acc.end());
  CHECK(max_diff(y[0], want) < 1e-5f);
}

TEST_CASE("Deconvolution known answer: 2x upsampling with kernel_h / kernel_w, stride_h / stride_w, no bias") {
  // x = [[1, 2], [3, 4]], one 2x1 kernel [1, 10] (rows), stride_h 2, stride_w 1: each input
  // row r lands on output rows 2r (x1) and 2r+1 (x10); output 4x2.
  WeightMap wm;
  CaffeBlob wb;
  wb.shape = {1, 1, 2, 1};
  wb.data = {1, 10};
  wm["up"].blobs = {wb};
  std::string net = R"(input: "x" input_dim: 1 input_dim: 1 input_dim: 2 input_dim: 2
    layer { name: "up" type: "Deconvolution" bottom: "x" top: "y"
            convolution_param { num_output: 1 bias_term: false kernel_h: 2 kernel_w: 1 stride_h: 2 stride_w: 1 } })";
  auto y = import_and_run(net, wm, {Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4})});
  REQUIRE(y[0].shape() == Shape{1, 1, 4, 2});
  CHECK(max_diff(y[0], {1, 2, 10, 20, 3, 4, 30, 40}) == 0.0f);
}

TEST_CASE("mutated prototxts of a real net give CaffeError or a model, never another failure") {
  std::string dir = CAFFE_TEST_DATA "/lenet/";
  auto text_bytes = read_file(dir + "lenet.prototxt");
  auto wbytes = read_file(dir + "lenet_iter_10000.caffemodel");
  REQUIRE(text_bytes);
  REQUIRE(wbytes);
  std::string text(text_bytes.value().begin(), text_bytes.value().end());
  WeightMap wm = caffe::parse_caffemodel(wbytes.value().data(), wbytes.value().size(), "lenet.caffemodel");
  std::mt19937 rng(11);
  const char* numbers[] = {"0", "-1", "1", "3", "7", "64", "100000", "-5", "2.5", "x"};
  int ok = 0, refused = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string t = text;
    for (int k = 0; k < 2; ++k) {
      // Replace one number in the text with another value.
      std::vector<size_t> pos;
      for (size_t i = 0; i < t.size(); ++i)
        if (std::isdigit(static_cast<unsigned char>(t[i])) && (i == 0 || !std::isalnum(static_cast<unsigned char>(t[i - 1]))))
          pos.push_back(i);
      size_t at = pos[rng() % pos.size()], end = at;
      while (end < t.size() && std::isdigit(static_cast<unsigned char>(t[end]))) ++end;
      t.replace(at, end - at, numbers[rng() % 10]);
    }
    try {
      caffe::import_caffe_text(t, "mutant.prototxt", &wm, "lenet.caffemodel", {});
      ++ok;
    } catch (const caffe::CaffeError& e) {
      CHECK(std::string(e.what()).find("mutant.prototxt") != std::string::npos);
      ++refused;
    }
  }
  MESSAGE("mutants imported " << ok << ", refused with a message " << refused);
  CHECK(refused > 0);
}

TEST_CASE("Convolution + BatchNorm + Scale: the fuse transform folds them into one Conv") {
  WeightMap wm;
  wm["conv"].blobs = {make_blob({4, 3, 3, 3}, 1), make_blob({4}, 2)};
  wm["bn"].blobs = {make_blob({4}, 3), make_blob({4}, 4, 0.5f, 2.f), CaffeBlob{{1}, {0.999f}}};
  wm["sc"].blobs = {make_blob({4}, 5), make_blob({4}, 6)};
  std::string net = R"(input: "data" input_dim: 1 input_dim: 3 input_dim: 8 input_dim: 8
    layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
    layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
    layer { name: "sc" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
    layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" })";
  auto bytes = import(net, wm);
  bool have_fuse = false;
  for (const auto& p : engine()->plugins())
    for (const auto& what : p.provides) have_fuse = have_fuse || what == "transform:fuse";
  if (!have_fuse) {
    MESSAGE("SKIPPED: transform plugin 'fuse' not built");
    return;
  }
  std::string report;
  auto fused = engine()->transform("fuse", bytes, {}, &report);
  REQUIRE_MESSAGE(fused, fused.status().message());
  auto before = load(bytes), after = load(fused.value());
  CHECK(before->graph().nodes.size() == 3);  // Conv, BatchNormalization (with the Scale), Relu
  for (const auto& n : after->graph().nodes) CHECK(n.op != "BatchNormalization");
  Tensor x = test::random_tensor({1, 3, 8, 8}, 9);
  auto y0 = run(before, {x}), y1 = run(after, {x});
  CHECK(test::max_abs_diff(y0[0], y1[0]) < 1e-5f);
}
