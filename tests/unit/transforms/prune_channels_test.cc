// prune-channels through Engine::transform on models built in code: tensors shrink
// consistently through BatchNormalization, a depthwise Conv, pools and Flatten, the
// result prepares and runs, FLOPs drop as counted by hand, ratio=0 changes nothing, and
// a channel that is zero or a duplicate is removed with the outputs unchanged after
// the least-squares re-fit of the next layer.
#include "transform_test_util.h"

#include <ir_util.h>

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace minnow;
using namespace minnow::test;

namespace {

Shape shape_of(const std::vector<uint8_t>& b, const std::string& tensor) {
  ir::ModelIR m = ir_of(b);
  int t = m.graph.find_tensor(tensor);
  REQUIRE_MESSAGE(t >= 0, tensor);
  return compress::constant_f32(m, t).shape();
}

// Calibration images as raw float32 [n, sample...] in a temporary file (removed on exit).
struct CalibFile {
  std::string path, shape;
  CalibFile(const Shape& sample, int64_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
    Shape s{n};
    s.insert(s.end(), sample.begin(), sample.end());
    Tensor t = test::random_tensor(s, seed, lo, hi);
    char tmpl[] = "/tmp/minnow-pc-calib-XXXXXX";
    int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, t.raw(), t.bytes()) == ssize_t(t.bytes()));
    close(fd);
    path = tmpl;
    for (int64_t d : s) shape += (shape.empty() ? "" : "x") + std::to_string(d);
  }
  ~CalibFile() { std::remove(path.c_str()); }
  KV opts(const std::string& ratio) const { return {{"images", path}, {"raw_shape", shape}, {"ratio", ratio}}; }
};

std::vector<uint8_t> prune(const std::vector<uint8_t>& in, const KV& opts, std::string* report = nullptr) {
  return xform("prune-channels", in, opts, report);
}

// Every filter (row of dimension 0) of weight `name` has a non-zero entry.
void check_no_zero_filter(const std::vector<uint8_t>& b, const char* name) {
  ir::ModelIR m = ir_of(b);
  Tensor w = compress::constant_f32(m, m.graph.find_tensor(name));
  const int64_t rows = w.shape()[0], per = w.elements() / rows;
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0;
    for (int64_t k = 0; k < per; ++k) s += std::fabs(w.data<float>()[r * per + k]);
    CHECK_MESSAGE(s > 0.f, name << " row " << r);
  }
}

// Conv(8) -> BN -> Relu -> depthwise Conv -> Relu -> MaxPool -> Conv(6) -> Relu -> Flatten -> Gemm(5).
std::vector<uint8_t> small_cnn() {
  ModelBuilder b("cnn");
  b.add_input("x", DataType::kFloat32, Shape{1, 3, 10, 10});
  b.add_constant("c1.w", test::random_tensor({8, 3, 3, 3}, 1, -0.5f, 0.5f));
  b.add_constant("c1.b", test::random_tensor({8}, 2));
  b.add_constant("bn.s", test::random_tensor({8}, 3, 0.5f, 1.5f));
  b.add_constant("bn.b", test::random_tensor({8}, 4));
  b.add_constant("bn.m", test::random_tensor({8}, 5));
  b.add_constant("bn.v", test::random_tensor({8}, 6, 0.5f, 2.f));
  b.add_constant("dw.w", test::random_tensor({8, 1, 3, 3}, 7));
  b.add_constant("dw.b", test::random_tensor({8}, 8));
  b.add_constant("c2.w", test::random_tensor({6, 8, 3, 3}, 9, -0.3f, 0.3f));
  b.add_constant("c2.b", test::random_tensor({6}, 10));
  b.add_constant("fc.w", test::random_tensor({5, 54}, 11, -0.3f, 0.3f));
  b.add_constant("fc.b", test::random_tensor({5}, 12));
  b.add_node("Conv", {"x", "c1.w", "c1.b"}, {"c1"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 1, 1, 1})});
  b.add_node("BatchNormalization", {"c1", "bn.s", "bn.b", "bn.m", "bn.v"}, {"n1"});
  b.add_node("Relu", {"n1"}, {"r1"});
  b.add_node("Conv", {"r1", "dw.w", "dw.b"}, {"d1"},
             {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 1, 1, 1}), Attr::Int("group", 8)});
  b.add_node("Relu", {"d1"}, {"r2"});
  b.add_node("MaxPool", {"r2"}, {"p1"}, {Attr::Ints("kernel_shape", {2, 2}), Attr::Ints("strides", {2, 2})});
  b.add_node("Conv", {"p1", "c2.w", "c2.b"}, {"c2"}, {Attr::Ints("kernel_shape", {3, 3})});
  b.add_node("Relu", {"c2"}, {"r3"});
  b.add_node("Flatten", {"r3"}, {"f"});
  b.add_node("Gemm", {"f", "fc.w", "fc.b"}, {"logits"}, {Attr::Int("transB", 1)});
  b.add_output("logits");
  return bytes_of(b);
}

}  // namespace

TEST_CASE("prune-channels shrinks Conv, BN, depthwise Conv, the next Conv and the Gemm after Flatten; FLOPs as counted") {
  auto in = small_cnn();
  CalibFile calib({3, 10, 10}, 200, 21);
  std::string report;
  auto out = prune(in, calib.opts("0.5"), &report);
  MESSAGE(report);
  CHECK(shape_of(out, "c1.w") == Shape{4, 3, 3, 3});
  CHECK(shape_of(out, "c1.b") == Shape{4});
  for (const char* t : {"bn.s", "bn.b", "bn.m", "bn.v", "dw.b"}) CHECK(shape_of(out, t) == Shape{4});
  CHECK(shape_of(out, "dw.w") == Shape{4, 1, 3, 3});
  CHECK(shape_of(out, "c2.w") == Shape{3, 4, 3, 3});
  CHECK(shape_of(out, "c2.b") == Shape{3});
  CHECK(shape_of(out, "fc.w") == Shape{5, 27});  // 3 channels x 3x3 columns each
  CHECK(shape_of(out, "fc.b") == Shape{5});       // the classifier keeps its outputs
  Tensor x = test::random_tensor({1, 3, 10, 10}, 99);
  Tensor y0 = run(in, x), y1 = run(out, x);
  REQUIRE(y1.shape() == Shape{1, 5});
  for (int64_t i = 0; i < 5; ++i) CHECK(std::isfinite(y1.data<float>()[i]));
  // By hand: c1 2*8*100*27, dw 2*8*100*9, c2 2*6*9*8*9, fc 2*5*54; after: 8 -> 4, 6 -> 3.
  const int64_t before = 43200 + 14400 + 7776 + 540, after = 21600 + 7200 + 1944 + 270;
  ir::ModelIR m = ir_of(out);
  REQUIRE(m.compression_log.size() == 1);
  const std::string& params = m.compression_log[0].parameters;
  CHECK(params.find("\"flops_before\":" + std::to_string(before)) != std::string::npos);
  CHECK(params.find("\"flops_after\":" + std::to_string(after)) != std::string::npos);
  CHECK(report.find(std::to_string(before) + " -> " + std::to_string(after)) != std::string::npos);
}

TEST_CASE("prune-channels with ratio=0 leaves the outputs exactly as they were") {
  auto in = small_cnn();
  CalibFile calib({3, 10, 10}, 50, 22);
  auto out = prune(in, calib.opts("0"));
  CHECK(shape_of(out, "c1.w") == Shape{8, 3, 3, 3});
  Tensor x = test::random_tensor({1, 3, 10, 10}, 98);
  Tensor y0 = run(in, x), y1 = run(out, x);
  CHECK(test::max_abs_diff(y0, y1) == 0.f);
}

TEST_CASE("prune-channels per-layer ratio and refusals") {
  auto in = small_cnn();
  CalibFile calib({3, 10, 10}, 50, 23);
  KV o = calib.opts("0");
  o.emplace_back("ratio@c2.w", "0.5");
  auto out = prune(in, o);
  CHECK(shape_of(out, "c1.w") == Shape{8, 3, 3, 3});
  CHECK(shape_of(out, "c2.w") == Shape{3, 8, 3, 3});
  CHECK(shape_of(out, "fc.w") == Shape{5, 27});
  std::string rep;
  KV bad = calib.opts("0.5");
  bad.emplace_back("ratio@fc.w", "0.5");  // the classifier: not prunable
  auto r = engine()->transform("prune-channels", in, bad, &rep);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("fc.w") != std::string::npos);
  auto r2 = engine()->transform("prune-channels", in, {{"ratio", "0.5"}}, &rep);
  REQUIRE_FALSE(r2.is_ok());
  CHECK(r2.status().message().find("images=") != std::string::npos);
  auto r3 = engine()->transform("prune-channels", in, calib.opts("1.5"), &rep);
  CHECK_FALSE(r3.is_ok());
}

TEST_CASE("prune-channels removes a zero and a duplicate Conv filter exactly (least-squares re-fit)") {
  // Conv(5) -> Relu -> Conv(4): filter 2 is zero with zero bias (its activation is 0),
  // filter 4 repeats filter 1 (same activation): both can go without changing anything.
  Tensor w1 = test::random_tensor({5, 2, 3, 3}, 31), b1 = test::random_tensor({5}, 32);
  float* w = w1.data<float>();
  for (int k = 0; k < 18; ++k) { w[2 * 18 + k] = 0.f; w[4 * 18 + k] = w[1 * 18 + k]; }
  b1.data<float>()[2] = 0.f;
  b1.data<float>()[4] = b1.data<float>()[1];
  ModelBuilder b("dup");
  b.add_input("x", DataType::kFloat32, Shape{1, 2, 7, 7});
  b.add_constant("w1", w1);
  b.add_constant("b1", b1);
  b.add_constant("w2", test::random_tensor({4, 5, 3, 3}, 33));
  b.add_constant("b2", test::random_tensor({4}, 34));
  b.add_node("Conv", {"x", "w1", "b1"}, {"c1"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 1, 1, 1})});
  b.add_node("Relu", {"c1"}, {"r1"});
  b.add_node("Conv", {"r1", "w2", "b2"}, {"y"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("strides", {2, 2})});
  b.add_output("y");
  auto in = bytes_of(b);
  CalibFile calib({2, 7, 7}, 100, 35);
  std::string report;
  auto out = prune(in, calib.opts("0.4"), &report);  // 2 of 5
  MESSAGE(report);
  REQUIRE(shape_of(out, "w1") == Shape{3, 2, 3, 3});
  CHECK(shape_of(out, "w2") == Shape{4, 3, 3, 3});
  check_no_zero_filter(out, "w1");  // the zero filter is gone
  for (uint64_t seed : {36, 37, 38}) {
    Tensor x = test::random_tensor({1, 2, 7, 7}, seed);
    CHECK(test::max_abs_diff(run(in, x), run(out, x)) < 1e-5f);
  }
}

TEST_CASE("prune-channels removes a zero and a duplicate Gemm neuron exactly, both weight layouts") {
  // Gemm(transB=1, 8 neurons) -> Relu -> Gemm(transB=0, 4 outputs) -> Relu -> MatMul(3).
  Tensor w1 = test::random_tensor({8, 6}, 41), b1 = test::random_tensor({8}, 42);
  for (int k = 0; k < 6; ++k) { w1.data<float>()[2 * 6 + k] = 0.f; w1.data<float>()[5 * 6 + k] = w1.data<float>()[k]; }
  b1.data<float>()[2] = 0.f;
  b1.data<float>()[5] = b1.data<float>()[0];
  Tensor w2 = test::random_tensor({8, 4}, 43);  // [K, N]
  ModelBuilder b("mlp");
  b.add_input("x", DataType::kFloat32, Shape{1, 6});
  b.add_constant("w1", w1);
  b.add_constant("b1", b1);
  b.add_constant("w2", w2);
  b.add_constant("b2", test::random_tensor({4}, 44));
  b.add_constant("w3", test::random_tensor({4, 3}, 45));
  b.add_node("Gemm", {"x", "w1", "b1"}, {"h1"}, {Attr::Int("transB", 1)});
  b.add_node("Relu", {"h1"}, {"r1"});
  b.add_node("Gemm", {"r1", "w2", "b2"}, {"h2"});
  b.add_node("Relu", {"h2"}, {"r2"});
  b.add_node("MatMul", {"r2", "w3"}, {"y"});
  b.add_output("y");
  auto in = bytes_of(b);
  CalibFile calib({6}, 200, 46);
  KV o = calib.opts("0.25");    // 2 of 8 neurons of the first layer
  o.emplace_back("ratio@w2", "0");  // the second stays
  std::string report;
  auto out = prune(in, o, &report);
  MESSAGE(report);
  CHECK(shape_of(out, "w1") == Shape{6, 6});
  CHECK(shape_of(out, "b1") == Shape{6});
  CHECK(shape_of(out, "w2") == Shape{6, 4});
  CHECK(shape_of(out, "w3") == Shape{4, 3});
  for (uint64_t seed : {47, 48, 49}) {
    Tensor x = test::random_tensor({1, 6}, seed);
    CHECK(test::max_abs_diff(run(in, x), run(out, x)) < 1e-5f);
  }
  // And the Gemm -> MatMul pair (a MatMul consumer has no bias to re-fit): shapes only.
  KV o2 = calib.opts("0");
  o2.emplace_back("ratio@w2", "0.5");
  auto out2 = prune(in, o2);
  CHECK(shape_of(out2, "w2") == Shape{8, 2});
  CHECK(shape_of(out2, "b2") == Shape{2});
  CHECK(shape_of(out2, "w3") == Shape{2, 3});
  Tensor y = run(out2, test::random_tensor({1, 6}, 50));
  CHECK(y.shape() == Shape{1, 3});
}

namespace {

// A residual block like mobilenet's: stem Conv(8) -> Relu = t1; t1 -> depthwise Conv ->
// Relu -> pointwise Conv(8) -> BN, added to t1 = t2; t2 is read by Conv(6, 3x3) ->
// GlobalAveragePool -> Flatten and by GlobalAveragePool -> Flatten -> Gemm(6), the two
// added into the output (one output: the training graph wants one). t1 and t2 share one channel group:
// producers stem and pw, consumers pw (through the depthwise Conv), the 3x3 Conv and the
// Gemm. `zero` makes channel 5 of both producers a zero filter with zero bias, so t1's
// channel 5 is 0 and t2's is BN's constant: removing it costs nothing after the re-fit.
std::vector<uint8_t> residual_block(bool zero) {
  Tensor stem = test::random_tensor({8, 2, 3, 3}, 61, -0.5f, 0.5f), stem_b = test::random_tensor({8}, 62);
  Tensor pw = test::random_tensor({8, 8, 1, 1}, 63, -0.5f, 0.5f), pw_b = test::random_tensor({8}, 64);
  if (zero) {
    for (int k = 0; k < 18; ++k) stem.data<float>()[5 * 18 + k] = 0.f;
    for (int k = 0; k < 8; ++k) pw.data<float>()[5 * 8 + k] = 0.f;
    stem_b.data<float>()[5] = 0.f;
    pw_b.data<float>()[5] = 0.f;
  }
  ModelBuilder b("residual");
  b.add_input("x", DataType::kFloat32, Shape{1, 2, 8, 8});
  b.add_constant("stem.w", stem);
  b.add_constant("stem.b", stem_b);
  b.add_constant("dw.w", test::random_tensor({8, 1, 3, 3}, 65));
  b.add_constant("dw.b", test::random_tensor({8}, 66));
  b.add_constant("pw.w", pw);
  b.add_constant("pw.b", pw_b);
  b.add_constant("bn.s", test::random_tensor({8}, 67, 0.5f, 1.5f));
  b.add_constant("bn.b", test::random_tensor({8}, 68));
  b.add_constant("bn.m", test::random_tensor({8}, 69));
  b.add_constant("bn.v", test::random_tensor({8}, 70, 0.5f, 2.f));
  b.add_constant("c.w", test::random_tensor({6, 8, 3, 3}, 71, -0.3f, 0.3f));
  b.add_constant("c.b", test::random_tensor({6}, 72));
  b.add_constant("fc.w", test::random_tensor({6, 8}, 73, -0.5f, 0.5f));
  b.add_constant("fc.b", test::random_tensor({6}, 74));
  b.add_node("Conv", {"x", "stem.w", "stem.b"}, {"s"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 1, 1, 1})});
  b.add_node("Relu", {"s"}, {"t1"});
  b.add_node("Conv", {"t1", "dw.w", "dw.b"}, {"d"},
             {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 1, 1, 1}), Attr::Int("group", 8)});
  b.add_node("Relu", {"d"}, {"dr"});
  b.add_node("Conv", {"dr", "pw.w", "pw.b"}, {"p"}, {Attr::Ints("kernel_shape", {1, 1})});
  b.add_node("BatchNormalization", {"p", "bn.s", "bn.b", "bn.m", "bn.v"}, {"pn"});
  b.add_node("Add", {"t1", "pn"}, {"t2"});
  b.add_node("Conv", {"t2", "c.w", "c.b"}, {"c"}, {Attr::Ints("kernel_shape", {3, 3})});
  b.add_node("GlobalAveragePool", {"c"}, {"cg"});
  b.add_node("Flatten", {"cg"}, {"y1"});
  b.add_node("GlobalAveragePool", {"t2"}, {"g"});
  b.add_node("Flatten", {"g"}, {"f"});
  b.add_node("Gemm", {"f", "fc.w", "fc.b"}, {"y2"}, {Attr::Int("transB", 1)});
  b.add_node("Add", {"y1", "y2"}, {"y"});
  b.add_output("y");
  return bytes_of(b);
}

}  // namespace

TEST_CASE("prune-channels prunes a residual Add's branches jointly: producers, BN, depthwise Conv, every consumer") {
  auto in = residual_block(false);
  CalibFile calib({2, 8, 8}, 200, 75);
  std::string report;
  auto out = prune(in, calib.opts("0.5"), &report);
  MESSAGE(report);
  CHECK(report.find("stem.w+pw.w") != std::string::npos);  // one group, both producers
  CHECK(shape_of(out, "stem.w") == Shape{4, 2, 3, 3});
  CHECK(shape_of(out, "stem.b") == Shape{4});
  CHECK(shape_of(out, "dw.w") == Shape{4, 1, 3, 3});
  CHECK(shape_of(out, "pw.w") == Shape{4, 4, 1, 1});  // a consumer and a producer of the group
  for (const char* t : {"dw.b", "pw.b", "bn.s", "bn.b", "bn.m", "bn.v"}) CHECK(shape_of(out, t) == Shape{4});
  CHECK(shape_of(out, "c.w") == Shape{6, 4, 3, 3});
  CHECK(shape_of(out, "fc.w") == Shape{6, 4});
  CHECK(run(out, test::random_tensor({1, 2, 8, 8}, 76)).shape() == Shape{1, 6});
  // FLOPs: stem 2*8*64*18, dw 2*8*64*9, pw 2*8*64*8, c 2*6*36*72, fc 2*6*8; 8 -> 4 channels.
  const int64_t before = 18432 + 9216 + 8192 + 31104 + 96, after = 9216 + 4608 + 2048 + 15552 + 48;
  CHECK(report.find(std::to_string(before) + " -> " + std::to_string(after)) != std::string::npos);

  // ratio 0: nothing changes, bit for bit.
  auto same = prune(in, calib.opts("0"));
  CHECK(shape_of(same, "pw.w") == Shape{8, 8, 1, 1});
  Tensor x = test::random_tensor({1, 2, 8, 8}, 77);
  CHECK(test::max_abs_diff(run(in, x), run(same, x)) == 0.f);
}

TEST_CASE("prune-channels across a residual Add: a channel dead in both branches goes exactly; the re-fit reduces the error") {
  auto in = residual_block(true);
  CalibFile calib({2, 8, 8}, 200, 78);
  std::string report;
  auto out = prune(in, calib.opts("0.125"), &report);  // 1 of 8
  MESSAGE(report);
  REQUIRE(shape_of(out, "stem.w") == Shape{7, 2, 3, 3});
  CHECK(shape_of(out, "pw.w") == Shape{7, 7, 1, 1});
  check_no_zero_filter(out, "stem.w");  // the dead filter is the one that went
  for (uint64_t seed : {79, 80}) {
    Tensor x = test::random_tensor({1, 2, 8, 8}, seed);
    CHECK(test::max_abs_diff(run(in, x), run(out, x)) < 1e-4f);
  }
  // Removing live channels: re-fitting every consumer beats keeping their weights.
  auto live = residual_block(false);
  KV fit = calib.opts("0.5"), nofit = calib.opts("0.5");
  nofit.emplace_back("refit", "0");
  auto a = prune(live, fit), b = prune(live, nofit);
  double ea = 0, eb = 0;
  for (uint64_t seed = 81; seed < 89; ++seed) {
    Tensor x = test::random_tensor({1, 2, 8, 8}, seed);
    Tensor y0 = run(live, x), ya = run(a, x), yb = run(b, x);
    for (int64_t k = 0; k < y0.elements(); ++k) {
      ea += std::pow(double(ya.data<float>()[k] - y0.data<float>()[k]), 2);
      eb += std::pow(double(yb.data<float>()[k] - y0.data<float>()[k]), 2);
    }
  }
  MESSAGE("squared error with re-fit " << ea << ", without " << eb);
  CHECK(ea < 0.5 * eb);
}

TEST_CASE("prune-channels leaves an Add with a graph input alone, and refuses two ratios for one group") {
  // Conv -> Add(x) -> Conv: the Add's other branch is the graph input, which cannot lose channels.
  ModelBuilder b("skip");
  b.add_input("x", DataType::kFloat32, Shape{1, 4, 6, 6});
  b.add_constant("w1", test::random_tensor({4, 4, 1, 1}, 91));
  b.add_constant("w2", test::random_tensor({3, 4, 3, 3}, 92));
  b.add_node("Conv", {"x", "w1"}, {"c1"}, {Attr::Ints("kernel_shape", {1, 1})});
  b.add_node("Add", {"x", "c1"}, {"a"});
  b.add_node("Conv", {"a", "w2"}, {"y"}, {Attr::Ints("kernel_shape", {3, 3})});
  b.add_output("y");
  auto skip = bytes_of(b);
  CalibFile calib({4, 6, 6}, 50, 93);
  std::string rep;
  auto out = prune(skip, calib.opts("0.5"), &rep);
  CHECK(shape_of(out, "w1") == Shape{4, 4, 1, 1});
  KV o = calib.opts("0.5");
  o.emplace_back("ratio@w1", "0.5");
  auto r = engine()->transform("prune-channels", skip, o, &rep);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("w1") != std::string::npos);

  auto res = residual_block(false);
  CalibFile calib2({2, 8, 8}, 50, 94);
  KV two = calib2.opts("0");
  two.emplace_back("ratio@stem.w", "0.5");
  two.emplace_back("ratio@pw.w", "0.25");
  auto r2 = engine()->transform("prune-channels", res, two, &rep);
  REQUIRE_FALSE(r2.is_ok());
  CHECK(r2.status().message().find("stem.w") != std::string::npos);
  CHECK(r2.status().message().find("pw.w") != std::string::npos);
  KV one = calib2.opts("0");
  one.emplace_back("ratio@pw.w", "0.25");  // either producer names the group
  CHECK(shape_of(prune(res, one), "stem.w") == Shape{6, 2, 3, 3});
}
