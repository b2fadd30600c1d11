// Element-wise ops: unary activations and broadcasting binary ops, against per-element
// formulas with numpy broadcasting written out index by index.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "test_util.h"

using namespace cdt;

namespace {

// Offset in a dense tensor of shape `s` of output multi-index `o` (right-aligned, dims
// of 1 repeat): numpy broadcasting, per element.
int64_t bcast_offset(const std::vector<int64_t>& s, const std::vector<int64_t>& os, int64_t flat) {
  std::vector<int64_t> o(os.size());
  for (size_t i = os.size(); i-- > 0;) {
    o[i] = flat % os[i];
    flat /= os[i];
  }
  int64_t off = 0;
  const size_t lead = os.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) off = off * s[i] + (s[i] == 1 ? 0 : o[lead + i]);
  return off;
}

std::vector<int64_t> bcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> o(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < o.size(); ++i) {
    int64_t da = i < o.size() - a.size() ? 1 : a[i - (o.size() - a.size())];
    int64_t db = i < o.size() - b.size() ? 1 : b[i - (o.size() - b.size())];
    o[i] = da == 1 ? db : da;
  }
  return o;
}

// Random shapes that broadcast together: start from an output shape, let each operand drop
// some leading dims and turn some dims into 1.
std::vector<std::vector<int64_t>> random_bcast_set(std::mt19937& rng, int n) {
  const size_t rank = rng() % 6;
  std::vector<int64_t> o(rank);
  for (auto& d : o) d = 1 + rng() % 5;
  std::vector<std::vector<int64_t>> shapes;
  for (int k = 0; k < n; ++k) {
    size_t drop = rank ? rng() % (rank + 1) : 0;
    std::vector<int64_t> s(o.begin() + drop, o.end());
    for (auto& d : s)
      if (rng() % 3 == 0) d = 1;
    shapes.push_back(s);
  }
  return shapes;
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> random_bcast_pair(std::mt19937& rng) {
  auto s = random_bcast_set(rng, 2);
  return {s[0], s[1]};
}

void check_binary_f32(const char* op, int version, const std::function<double(float, float)>& f,
                      float lo_b = -2.0f, float hi_b = 2.0f, int cases = 200) {
  std::mt19937 rng(77);
  for (int i = 0; i < cases; ++i) {
    auto shapes = random_bcast_pair(rng);
    if (i % 2) std::swap(shapes.first, shapes.second);
    Tensor a = random_f32(rng, shapes.first, -2.0f, 2.0f);
    Tensor b = random_f32(rng, shapes.second, lo_b, hi_b);
    std::vector<int64_t> os = bcast_shape(a.shape, b.shape);
    std::vector<double> want(static_cast<size_t>(product(os)));
    for (int64_t j = 0; j < product(os); ++j)
      want[j] = f(a.f()[bcast_offset(a.shape, os, j)], b.f()[bcast_offset(b.shape, os, j)]);
    std::vector<Tensor> in{a, b}, out{Tensor::out(os)};
    const Ctx ctx = kAllCtx[i % 3];
    CAPTURE(op);
    CAPTURE(shape_str(a.shape));
    CAPTURE(shape_str(b.shape));
    CAPTURE(ctx_name(ctx));
    RunResult r = run(FakeNode(op, version), in, out, ctx);
    REQUIRE_MESSAGE(r.ok(), r.error);
    CDT_CHECK_CLOSE(out[0].f(), want);
  }
  // One big case with an inner broadcast, to exercise chunking.
  for (Ctx ctx : kAllCtx) {
    Tensor a = random_f32(rng, {3, 130, 257}, -2.0f, 2.0f);
    Tensor b = random_f32(rng, {130, 1}, lo_b, hi_b);
    std::vector<int64_t> os = a.shape;
    std::vector<double> want(static_cast<size_t>(product(os)));
    for (int64_t j = 0; j < product(os); ++j)
      want[j] = f(a.f()[j], b.f()[bcast_offset(b.shape, os, j)]);
    std::vector<Tensor> in{a, b}, out{Tensor::out(os)};
    RunResult r = run(FakeNode(op, version), in, out, ctx);
    REQUIRE_MESSAGE(r.ok(), r.error);
    if (ctx == Ctx::kChunky) CHECK(r.chunks > 1);
    CDT_CHECK_CLOSE(out[0].f(), want);
  }
}

void check_unary_f32(FakeNode node, const std::function<double(float)>& f, float lo = -4.0f,
                     float hi = 4.0f) {
  std::mt19937 rng(5);
  const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {7}, {3, 5}, {2, 3, 4, 5}, {70001}};
  int i = 0;
  for (const auto& s : shapes)
    for (Ctx ctx : kAllCtx)
      for (bool in_place : {false, true}) {
        Tensor x = random_f32(rng, s, lo, hi);
        std::vector<double> want;
        for (int64_t j = 0; j < x.numel(); ++j) want.push_back(f(x.f()[j]));
        std::vector<Tensor> in{x}, out{Tensor::out(s)};
        RunOptions o;
        o.ctx = ctx;
        o.in_place = in_place;
        CAPTURE(node.op());
        CAPTURE(shape_str(s));
        CAPTURE(ctx_name(ctx));
        CAPTURE(in_place);
        RunResult r = run(node, in, out, o);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK(r.inplace_input == 0);
        CDT_CHECK_CLOSE(out[0].f(), want);
        ++i;
      }
}

}  // namespace

TEST_SUITE("elementwise") {
  TEST_CASE("Relu") {
    std::vector<Tensor> in{Tensor::f32({4}, {-1.5f, 0.0f, 2.0f, -0.0f})}, out{Tensor::out({4})};
    RunResult r = run(FakeNode("Relu", 14), in, out);
    REQUIRE_MESSAGE(r.ok(), r.error);
    CHECK(r.kernel_name == "f32_relu__hwy");
    CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({0, 0, 2, 0}));
    check_unary_f32(FakeNode("Relu", 6), [](float x) { return x > 0 ? x : 0.0; });
    // int64 Relu is refused with a reason
    std::vector<Tensor> in2{Tensor::i64({2}, {1, -1})}, out2{Tensor::out({2}, MN_I64)};
    mn_bid b = bid(FakeNode("Relu", 14), in2, out2);
    CHECK(b.cost < 0);
    CHECK(std::string(b.reason).find("int64") != std::string::npos);
  }

  TEST_CASE("Add known answers, float32 and int64") {
    {
      std::vector<Tensor> in{Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6}),
                             Tensor::f32({3}, {10, 20, 30})};
      std::vector<Tensor> out{Tensor::out({2, 3})};
      RunResult r = run(FakeNode("Add", 14), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_vadd__hwy");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({11, 22, 33, 14, 25, 36}));
    }
    {  // (2,1) + (1,3) -> (2,3): both operands broadcast
      std::vector<Tensor> in{Tensor::f32({2, 1}, {1, 2}), Tensor::f32({1, 3}, {10, 20, 30})};
      std::vector<Tensor> out{Tensor::out({2, 3})};
      RunResult r = run(FakeNode("Add", 14), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({11, 21, 31, 12, 22, 32}));
    }
    {  // int64 (shape arithmetic), scalar operand
      std::vector<Tensor> in{Tensor::i64({3}, {1, -2, 3}), Tensor::i64({}, {5})};
      std::vector<Tensor> out{Tensor::out({3}, MN_I64)};
      RunResult r = run(FakeNode("Add", 14), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "i64_add_ref");
      CHECK(out[0].l()[0] == 6);
      CHECK(out[0].l()[1] == 3);
      CHECK(out[0].l()[2] == 8);
    }
    {  // opset 6 legacy broadcast: B (3) aligned at axis 1 of A (2,3,2)
      std::vector<Tensor> in{Tensor::f32({2, 3, 2}, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}),
                             Tensor::f32({3}, {10, 20, 30})};
      std::vector<Tensor> out{Tensor::out({2, 3, 2})};
      RunResult r = run(FakeNode("Add", 6).set("broadcast", 1).set("axis", 1), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(),
                      std::vector<float>({10, 10, 20, 20, 30, 30, 11, 11, 21, 21, 31, 31}));
    }
  }

  TEST_CASE("Add matches numpy broadcasting over random shapes") {
    check_binary_f32("Add", 14, [](float a, float b) { return double(a) + b; });
  }

  TEST_CASE("Add errors") {
    std::vector<Tensor> in{Tensor::f32({2, 3}), Tensor::f32({4})}, out{Tensor::out({2, 3})};
    mn_bid b = bid(FakeNode("Add", 14), in, out);
    CHECK(b.cost < 0);
    CHECK(std::string(b.reason).find("broadcast") != std::string::npos);
    RunOptions o;
    o.skip_bid = true;
    o.hide_dims_at_prepare = true;
    RunResult r = run(FakeNode("Add", 14), in, out, o);
    CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
    std::vector<Tensor> mixed{Tensor::f32({2}), Tensor::i64({2})}, out2{Tensor::out({2})};
    CHECK(bid(FakeNode("Add", 14), mixed, out2).cost < 0);
    // Integer types are served (issue 3); element types with no kernel are refused.
    std::vector<Tensor> f64{Tensor::of(MN_F64, {2}), Tensor::of(MN_F64, {2})};
    std::vector<Tensor> out3{Tensor::out({2}, MN_F64)};
    CHECK(bid(FakeNode("Add", 14), f64, out3).cost < 0);
  }

  TEST_CASE("Sub, Mul, Div, Pow, Max, Min, Sum match numpy over random broadcasts") {
    check_binary_f32("Sub", 14, [](float a, float b) { return double(a) - b; });
    check_binary_f32("Mul", 14, [](float a, float b) { return double(a) * b; });
    // Divisors kept away from 0 so the relative check is meaningful.
    check_binary_f32(
        "Div", 14, [](float a, float b) { return double(a) / b; }, 0.5f, 2.0f);
    check_binary_f32("Max", 13, [](float a, float b) { return std::max<double>(a, b); });
    check_binary_f32("Min", 13, [](float a, float b) { return std::min<double>(a, b); });
    check_binary_f32("Sum", 13, [](float a, float b) { return double(a) + b; });
  }

  TEST_CASE("Pow") {
    // Positive bases for real exponents; negative bases with integral exponents.
    std::mt19937 rng(12);
    for (int i = 0; i < 60; ++i) {
      auto shapes = random_bcast_pair(rng);
      Tensor a = random_f32(rng, shapes.first, 0.1f, 3.0f);
      Tensor b = random_f32(rng, shapes.second, -3.0f, 3.0f);
      std::vector<int64_t> os = bcast_shape(a.shape, b.shape);
      std::vector<double> want;
      for (int64_t j = 0; j < product(os); ++j)
        want.push_back(std::pow(double(a.f()[bcast_offset(a.shape, os, j)]),
                                double(b.f()[bcast_offset(b.shape, os, j)])));
      std::vector<Tensor> in{a, b}, out{Tensor::out(os)};
      RunResult r = run(FakeNode("Pow", 15), in, out, kAllCtx[i % 3]);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), want);
    }
    {  // int64 exponent (opset 12+), negative base
      std::vector<Tensor> in{Tensor::f32({4}, {-2, 3, 0.5f, -1}), Tensor::i64({4}, {3, 2, -1, 0})};
      std::vector<Tensor> out{Tensor::out({4})};
      RunResult r = run(FakeNode("Pow", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_pow_i64_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({-8, 9, 2, 1}));
    }
  }

  TEST_CASE("Sub / Mul / Div known answers, int64 and legacy broadcast") {
    {
      std::vector<Tensor> in{Tensor::i64({4}, {7, -7, 7, -7}), Tensor::i64({4}, {2, 2, -2, -2})};
      std::vector<Tensor> out{Tensor::out({4}, MN_I64)};
      RunResult r = run(FakeNode("Div", 14), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "i64_div_ref");
      // truncation toward zero
      CHECK(std::vector<int64_t>(out[0].l(), out[0].l() + 4) ==
            std::vector<int64_t>({3, -3, -3, 3}));
      std::vector<Tensor> zero{Tensor::i64({2}, {1, 2}), Tensor::i64({2}, {1, 0})};
      std::vector<Tensor> out2{Tensor::out({2}, MN_I64)};
      RunResult z = run(FakeNode("Div", 14), zero, out2);
      CHECK(z.status == MN_ERR_INVALID_ARGUMENT);
      CHECK(z.error.find("division by zero") != std::string::npos);
    }
    {
      std::vector<Tensor> in{Tensor::i64({2, 2}, {1, 2, 3, 4}), Tensor::i64({2}, {10, 100})};
      std::vector<Tensor> out{Tensor::out({2, 2}, MN_I64)};
      REQUIRE(run(FakeNode("Mul", 14), in, out).ok());
      CHECK(std::vector<int64_t>(out[0].l(), out[0].l() + 4) ==
            std::vector<int64_t>({10, 200, 30, 400}));
      REQUIRE(run(FakeNode("Sub", 14), in, out).ok());
      CHECK(std::vector<int64_t>(out[0].l(), out[0].l() + 4) ==
            std::vector<int64_t>({-9, -98, -7, -96}));
    }
    {  // float: x/0 follows IEEE
      std::vector<Tensor> in{Tensor::f32({2}, {1, -1}), Tensor::f32({1}, {0})};
      std::vector<Tensor> out{Tensor::out({2})};
      REQUIRE(run(FakeNode("Div", 14), in, out).ok());
      CHECK(std::isinf(out[0].f()[0]));
      CHECK(out[0].f()[1] < 0);
    }
    {  // opset 6, broadcast=1 without axis: B matches A's trailing dims
      std::vector<Tensor> in{Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6}),
                             Tensor::f32({3}, {1, 10, 100})};
      std::vector<Tensor> out{Tensor::out({2, 3})};
      REQUIRE(run(FakeNode("Mul", 6).set("broadcast", 1), in, out).ok());
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1, 20, 300, 4, 50, 600}));
      // axis 0 for a (2) B
      std::vector<Tensor> in2{Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::f32({2}, {1, -1})};
      REQUIRE(run(FakeNode("Sub", 6).set("broadcast", 1).set("axis", 0), in2, out).ok());
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({0, 1, 2, 5, 6, 7}));
    }
  }

  TEST_CASE("Max / Min / Sum: one, two and many inputs") {
    std::mt19937 rng(21);
    for (const char* op : {"Max", "Min", "Sum"}) {
      for (int i = 0; i < 40; ++i) {
        const int n = 1 + i % 4;
        std::vector<Tensor> in;
        std::vector<int64_t> os;
        for (const auto& sh : random_bcast_set(rng, n)) {
          in.push_back(random_f32(rng, sh));
          os = in.size() == 1 ? sh : bcast_shape(os, sh);
        }
        std::vector<double> want(static_cast<size_t>(product(os)));
        for (int64_t j = 0; j < product(os); ++j) {
          double acc = in[0].f()[bcast_offset(in[0].shape, os, j)];
          for (int k = 1; k < n; ++k) {
            double v = in[k].f()[bcast_offset(in[k].shape, os, j)];
            acc = std::string(op) == "Max"   ? std::max(acc, v)
                  : std::string(op) == "Min" ? std::min(acc, v)
                                             : acc + v;
          }
          want[j] = acc;
        }
        std::vector<Tensor> out{Tensor::out(os)};
        CAPTURE(op);
        CAPTURE(n);
        RunResult r = run(FakeNode(op, 13), in, out, kAllCtx[i % 3]);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CDT_CHECK_CLOSE(out[0].f(), want);
      }
    }
    {  // int64 Max, NaN propagation in float Max
      std::vector<Tensor> in{Tensor::i64({3}, {1, 5, -2}), Tensor::i64({1}, {2})};
      std::vector<Tensor> out{Tensor::out({3}, MN_I64)};
      REQUIRE(run(FakeNode("Max", 13), in, out).ok());
      CHECK(std::vector<int64_t>(out[0].l(), out[0].l() + 3) == std::vector<int64_t>({2, 5, 2}));
      std::vector<Tensor> fin{Tensor::f32({2}, {NAN, 1}), Tensor::f32({2}, {0, NAN})};
      std::vector<Tensor> fout{Tensor::out({2})};
      REQUIRE(run(FakeNode("Max", 13), fin, fout).ok());
      CHECK(std::isnan(fout[0].f()[0]));
      CHECK(std::isnan(fout[0].f()[1]));
    }
    {  // Sum of int64 is not an ONNX type: refused
      std::vector<Tensor> in{Tensor::i64({2}), Tensor::i64({2})}, out{Tensor::out({2}, MN_I64)};
      CHECK(bid(FakeNode("Sum", 13), in, out).cost < 0);
    }
  }

  TEST_CASE("Equal / Less / Greater give bool, for float32 and int64") {
    {
      std::vector<Tensor> in{Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::f32({3}, {2, 2, 7})};
      std::vector<Tensor> out{Tensor::out({2, 3}, MN_BOOL)};
      RunResult r = run(FakeNode("Less", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_less_ref");
      CHECK(std::vector<uint8_t>(out[0].b(), out[0].b() + 6) ==
            std::vector<uint8_t>({1, 0, 1, 0, 0, 1}));
      REQUIRE(run(FakeNode("Greater", 13), in, out).ok());
      CHECK(std::vector<uint8_t>(out[0].b(), out[0].b() + 6) ==
            std::vector<uint8_t>({0, 0, 0, 1, 1, 0}));
      REQUIRE(run(FakeNode("Equal", 13), in, out).ok());
      CHECK(std::vector<uint8_t>(out[0].b(), out[0].b() + 6) ==
            std::vector<uint8_t>({0, 1, 0, 0, 0, 0}));
    }
    {
      std::vector<Tensor> in{Tensor::i64({4}, {-1, 0, 5, 9}), Tensor::i64({}, {5})};
      std::vector<Tensor> out{Tensor::out({4}, MN_BOOL)};
      RunResult r = run(FakeNode("Equal", 11), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "i64_equal_ref");
      CHECK(std::vector<uint8_t>(out[0].b(), out[0].b() + 4) == std::vector<uint8_t>({0, 0, 1, 0}));
      REQUIRE(run(FakeNode("Greater", 13), in, out).ok());
      CHECK(std::vector<uint8_t>(out[0].b(), out[0].b() + 4) == std::vector<uint8_t>({0, 0, 0, 1}));
    }
    // random broadcasts against the per-element formula
    std::mt19937 rng(40);
    for (int i = 0; i < 60; ++i) {
      auto shapes = random_bcast_pair(rng);
      Tensor a = Tensor::i64(shapes.first), b = Tensor::i64(shapes.second);
      for (int64_t j = 0; j < a.numel(); ++j) a.l()[j] = static_cast<int64_t>(rng() % 5);
      for (int64_t j = 0; j < b.numel(); ++j) b.l()[j] = static_cast<int64_t>(rng() % 5);
      std::vector<int64_t> os = bcast_shape(a.shape, b.shape);
      std::vector<Tensor> in{a, b}, out{Tensor::out(os, MN_BOOL)};
      RunResult r = run(FakeNode("Less", 13), in, out, kAllCtx[i % 3]);
      REQUIRE_MESSAGE(r.ok(), r.error);
      bool same = true;
      for (int64_t j = 0; j < product(os); ++j)
        same = same && out[0].b()[j] == (a.l()[bcast_offset(a.shape, os, j)] <
                                         b.l()[bcast_offset(b.shape, os, j)]);
      CHECK(same);
    }
  }

  TEST_CASE("Activations and unary math match their formulas (also in place)") {
    check_unary_f32(
        FakeNode("Sigmoid", 13), [](float x) { return 1.0 / (1.0 + std::exp(-double(x))); }, -30,
        30);
    check_unary_f32(FakeNode("Tanh", 13), [](float x) { return std::tanh(double(x)); });
    check_unary_f32(FakeNode("LeakyRelu", 16).set("alpha", 0.3f),
                    [](float x) { return x >= 0 ? double(x) : 0.3 * x; });
    check_unary_f32(FakeNode("LeakyRelu", 6),
                    [](float x) { return x >= 0 ? double(x) : 0.01 * x; });
    check_unary_f32(FakeNode("HardSigmoid", 6).set("alpha", 0.25f).set("beta", 0.4f),
                    [](float x) { return std::min(1.0, std::max(0.0, 0.25 * x + 0.4)); });
    check_unary_f32(FakeNode("HardSigmoid", 6),
                    [](float x) { return std::min(1.0, std::max(0.0, 0.2 * x + 0.5)); });
    check_unary_f32(FakeNode("HardSwish", 14),
                    [](float x) { return x * std::min(1.0, std::max(0.0, x / 6.0 + 0.5)); });
    check_unary_f32(FakeNode("Elu", 6).set("alpha", 0.7f),
                    [](float x) { return x >= 0 ? double(x) : 0.7 * (std::exp(double(x)) - 1); });
    check_unary_f32(
        FakeNode("Softplus", 1), [](float x) { return std::log1p(std::exp(double(x))); }, -20, 20);
    check_unary_f32(FakeNode("Exp", 13), [](float x) { return std::exp(double(x)); });
    check_unary_f32(
        FakeNode("Log", 13), [](float x) { return std::log(double(x)); }, 0.01f, 100);
    check_unary_f32(
        FakeNode("Sqrt", 13), [](float x) { return std::sqrt(double(x)); }, 0, 100);
    check_unary_f32(FakeNode("Neg", 13), [](float x) { return -double(x); });
    check_unary_f32(FakeNode("Abs", 13), [](float x) { return std::fabs(double(x)); });
    check_unary_f32(FakeNode("Relu", 14), [](float x) { return std::max(0.0, double(x)); });
  }

  TEST_CASE("Unary known answers and edge values") {
    auto run1 = [](FakeNode node, std::vector<float> x) {
      std::vector<Tensor> in{Tensor::f32({static_cast<int64_t>(x.size())}, x)};
      std::vector<Tensor> out{Tensor::out({static_cast<int64_t>(x.size())})};
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      return out[0].floats();
    };
    CDT_CHECK_CLOSE(run1(FakeNode("Sigmoid", 13), {0, -100, 100}).data(),
                    std::vector<float>({0.5f, 0, 1}));
    CDT_CHECK_CLOSE(run1(FakeNode("HardSwish", 14), {-3, 0, 3, 1}).data(),
                    std::vector<float>({0, 0, 3, 1 * (1 / 6.0f + 0.5f)}));
    CDT_CHECK_CLOSE(run1(FakeNode("Softplus", 1), {0, 100, -100}).data(),
                    std::vector<float>({0.6931472f, 100, 0}));
    CDT_CHECK_CLOSE(run1(FakeNode("Elu", 6), {-1, 2}).data(), std::vector<float>({-0.6321206f, 2}));
    std::vector<float> l = run1(FakeNode("Log", 13), {0, -1});
    CHECK(std::isinf(l[0]));
    CHECK(std::isnan(l[1]));
    {  // int64 Neg / Abs
      std::vector<Tensor> in{Tensor::i64({3}, {-3, 0, 4})}, out{Tensor::out({3}, MN_I64)};
      RunResult r = run(FakeNode("Abs", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "i64_abs_ref");
      CHECK(std::vector<int64_t>(out[0].l(), out[0].l() + 3) == std::vector<int64_t>({3, 0, 4}));
      REQUIRE(run(FakeNode("Neg", 13), in, out).ok());
      CHECK(std::vector<int64_t>(out[0].l(), out[0].l() + 3) == std::vector<int64_t>({3, 0, -4}));
    }
    std::vector<Tensor> in{Tensor::i64({2})}, out{Tensor::out({2}, MN_I64)};
    CHECK(bid(FakeNode("Sigmoid", 13), in, out).cost < 0);
    CHECK(bid(FakeNode("HardSwish", 13), in, out).cost < 0);  // not before opset 14
  }

  TEST_CASE("Clip: attributes before opset 11, optional inputs after") {
    Tensor x = Tensor::f32({5}, {-2, -0.5f, 0, 0.5f, 2});
    auto run_clip = [&](FakeNode node, std::vector<Tensor> extra, bool in_place = false) {
      std::vector<Tensor> in{x};
      for (auto& t : extra) in.push_back(t);
      std::vector<Tensor> out{Tensor::out({5})};
      RunOptions o;
      o.in_place = in_place;
      RunResult r = run(node, in, out, o);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.inplace_input == 0);
      return out[0].floats();
    };
    CDT_CHECK_CLOSE(run_clip(FakeNode("Clip", 6).set("min", -1.0f).set("max", 1.0f), {}).data(),
                    std::vector<float>({-1, -0.5f, 0, 0.5f, 1}));
    CDT_CHECK_CLOSE(run_clip(FakeNode("Clip", 6).set("max", 0.25f), {}, true).data(),
                    std::vector<float>({-2, -0.5f, 0, 0.25f, 0.25f}));
    CDT_CHECK_CLOSE(run_clip(FakeNode("Clip", 13), {Tensor::f32({}, {0.0f})}).data(),
                    std::vector<float>({0, 0, 0, 0.5f, 2}));
    CDT_CHECK_CLOSE(
        run_clip(FakeNode("Clip", 13), {Tensor::none(), Tensor::f32({}, {0.0f})}).data(),
        std::vector<float>({-2, -0.5f, 0, 0, 0}));
    CDT_CHECK_CLOSE(run_clip(FakeNode("Clip", 12), {}).data(), x.floats());
    // min > max: everything becomes max
    CDT_CHECK_CLOSE(
        run_clip(FakeNode("Clip", 11), {Tensor::f32({1}, {1.0f}), Tensor::f32({}, {-1.0f})}).data(),
        std::vector<float>({-1, -1, -1, -1, -1}));
    std::vector<Tensor> in{x, Tensor::f32({2}, {0, 1})}, out{Tensor::out({5})};
    CHECK(bid(FakeNode("Clip", 13), in, out).cost < 0);  // min is not a scalar
    RunOptions o;
    o.skip_bid = true;
    o.hide_dims_at_prepare = true;
    CHECK(run(FakeNode("Clip", 13), in, out, o).status == MN_ERR_INVALID_ARGUMENT);
  }

  TEST_CASE("PRelu: broadcast slope, legacy per-channel slope, in place") {
    std::mt19937 rng(17);
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
        {{2, 3, 4, 5}, {3, 1, 1}},    {{2, 3, 4, 5}, {1}}, {{2, 3, 4, 5}, {5}},
        {{2, 3, 4, 5}, {2, 3, 4, 5}}, {{7}, {7}},          {{3, 4}, {1, 4}}};
    int i = 0;
    for (const auto& c : cases)
      for (bool in_place : {false, true}) {
        Tensor x = random_f32(rng, c.first), s = random_f32(rng, c.second);
        std::vector<double> want;
        for (int64_t j = 0; j < x.numel(); ++j) {
          double v = x.f()[j];
          want.push_back(v < 0 ? v * s.f()[bcast_offset(s.shape, x.shape, j)] : v);
        }
        std::vector<Tensor> in{x, s}, out{Tensor::out(c.first)};
        RunOptions o;
        o.ctx = kAllCtx[i++ % 3];
        o.in_place = in_place;
        RunResult r = run(FakeNode("PRelu", 16), in, out, o);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CDT_CHECK_CLOSE(out[0].f(), want);
      }
    {  // opset 6: a 1-D slope of C values is per channel
      Tensor x = Tensor::f32({1, 2, 3}, {-1, -1, 1, -1, 2, -2});
      std::vector<Tensor> in{x, Tensor::f32({2}, {0.5f, 2})}, out{Tensor::out({1, 2, 3})};
      RunResult r = run(FakeNode("PRelu", 6), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({-0.5f, -0.5f, 1, -2, 2, -4}));
      // at opset 7+ numpy rules apply and (2) does not broadcast to (1,2,3)
      RunResult r7 = run(FakeNode("PRelu", 9), in, out);
      CHECK(r7.status == MN_ERR_INVALID_ARGUMENT);
    }
  }

  TEST_CASE("BatchNormalization (inference)") {
    {  // known answer: scale 2, B 1, mean 3, var 4 - eps
      const float eps = 1e-5f;
      std::vector<Tensor> in{Tensor::f32({1, 1, 2}, {3, 5}), Tensor::f32({1}, {2}),
                             Tensor::f32({1}, {1}), Tensor::f32({1}, {3}),
                             Tensor::f32({1}, {4 - eps})};
      std::vector<Tensor> out{Tensor::out({1, 1, 2})};
      RunResult r = run(FakeNode("BatchNormalization", 15), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_batchnorm_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1, 3}));
    }
    std::mt19937 rng(3);
    const std::vector<std::vector<int64_t>> shapes = {
        {2, 3}, {1, 5, 7}, {2, 3, 4, 5}, {1, 16, 64, 64}, {2, 2, 2, 3, 2}};
    int i = 0;
    for (const auto& sh : shapes)
      for (bool in_place : {false, true}) {
        const int64_t C = sh[1];
        Tensor x = random_f32(rng, sh), sc = random_f32(rng, {C}), b = random_f32(rng, {C});
        Tensor m = random_f32(rng, {C}), v = random_f32(rng, {C}, 0.1f, 2.0f);
        const float eps = 1e-3f;
        const int64_t plane = x.numel() / (sh[0] * C);
        std::vector<double> want;
        for (int64_t j = 0; j < x.numel(); ++j) {
          const int64_t c = (j / plane) % C;
          want.push_back(double(sc.f()[c]) * (x.f()[j] - double(m.f()[c])) /
                             std::sqrt(double(v.f()[c]) + eps) +
                         b.f()[c]);
        }
        std::vector<Tensor> in{x, sc.as_constant(), b, m, v}, out{Tensor::out(sh)};
        RunOptions o;
        o.ctx = kAllCtx[i++ % 3];
        o.in_place = in_place;
        RunResult r = run(FakeNode("BatchNormalization", 9).set("epsilon", eps), in, out, o);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CDT_CHECK_CLOSE(out[0].f(), want);
      }
    {  // refusals
      std::vector<Tensor> in{Tensor::f32({1, 2, 2}), Tensor::f32({2}), Tensor::f32({2}),
                             Tensor::f32({2}), Tensor::f32({2})};
      std::vector<Tensor> out{Tensor::out({1, 2, 2})};
      CHECK(bid(FakeNode("BatchNormalization", 7).set("spatial", 0), in, out).cost < 0);
      CHECK(bid(FakeNode("BatchNormalization", 14).set("training_mode", 1), in, out).cost < 0);
      std::vector<Tensor> out5{Tensor::out({1, 2, 2}), Tensor::out({2}), Tensor::out({2})};
      CHECK(bid(FakeNode("BatchNormalization", 9), in, out5).cost < 0);
      std::vector<Tensor> bad{Tensor::f32({1, 2, 2}), Tensor::f32({3}), Tensor::f32({2}),
                              Tensor::f32({2}), Tensor::f32({2})};
      CHECK(bid(FakeNode("BatchNormalization", 15), bad, out).cost < 0);
      RunOptions o;
      o.skip_bid = true;
      o.hide_dims_at_prepare = true;
      CHECK(run(FakeNode("BatchNormalization", 15), bad, out, o).status == MN_ERR_INVALID_ARGUMENT);
    }
  }
}
