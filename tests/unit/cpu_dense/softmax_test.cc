// Softmax (and later LogSoftmax): both the opset < 13 coerce-to-2-D form and the opset >= 13
// single-axis form, against the definition in double precision.
#include <doctest/doctest.h>

#include <cmath>

#include "test_util.h"

using namespace cdt;

namespace {

// Normalises x viewed as (outer, len, inner) along len.
std::vector<double> naive_softmax(const Tensor& x, int64_t outer, int64_t len, int64_t inner,
                                  bool log) {
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < len; ++j) m = std::max(m, double(x.f()[(o * len + j) * inner + i]));
      for (int64_t j = 0; j < len; ++j) s += std::exp(double(x.f()[(o * len + j) * inner + i]) - m);
      for (int64_t j = 0; j < len; ++j) {
        const double v = double(x.f()[(o * len + j) * inner + i]) - m;
        y[(o * len + j) * inner + i] = log ? v - std::log(s) : std::exp(v) / s;
      }
    }
  return y;
}

}  // namespace

void check_softmax_family(const char* op, bool log) {
  std::mt19937 rng(4);
  const std::vector<std::vector<int64_t>> shapes = {
      {5}, {1, 1}, {3, 7}, {2, 3, 4}, {2, 1, 5, 3}, {4, 1000}, {1, 64, 33, 3}};
  int n = 0;
  for (const auto& s : shapes) {
    const int r = static_cast<int>(s.size());
    for (int axis = -r; axis < r; ++axis)
      for (int version : {11, 13}) {
        Tensor x = random_f32(rng, s, -8.0f, 8.0f);
        const int a = axis < 0 ? axis + r : axis;
        int64_t outer = 1, len = 1, inner = 1;
        for (int i = 0; i < a; ++i) outer *= s[i];
        if (version < 13) {
          for (int i = a; i < r; ++i) len *= s[i];
        } else {
          len = s[a];
          for (int i = a + 1; i < r; ++i) inner *= s[i];
        }
        std::vector<double> want = naive_softmax(x, outer, len, inner, log);
        std::vector<Tensor> in{x}, out{Tensor::out(s)};
        const Ctx ctx = kAllCtx[n++ % 3];
        CAPTURE(op);
        CAPTURE(shape_str(s));
        CAPTURE(axis);
        CAPTURE(version);
        CAPTURE(ctx_name(ctx));
        RunResult res = run(FakeNode(op, version).set("axis", axis), in, out, ctx);
        REQUIRE_MESSAGE(res.ok(), res.error);
        CDT_CHECK_CLOSE(out[0].f(), want);
      }
  }
}

TEST_SUITE("softmax") {
  TEST_CASE("Softmax known answers and defaults") {
    {  // [1,2,3]
      std::vector<Tensor> in{Tensor::f32({3}, {1, 2, 3})}, out{Tensor::out({3})};
      RunResult r = run(FakeNode("Softmax", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_softmax_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({0.09003057f, 0.24472847f, 0.66524096f}));
    }
    // (1,2,2) = [[[0, ln3], [0, 0]]]: opset 13 default axis -1 normalises each pair;
    // opset 11 default axis 1 normalises all four values together.
    const float l3 = std::log(3.0f);
    Tensor x = Tensor::f32({1, 2, 2}, {0, l3, 0, 0});
    {
      std::vector<Tensor> in{x}, out{Tensor::out({1, 2, 2})};
      RunResult r = run(FakeNode("Softmax", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({0.25f, 0.75f, 0.5f, 0.5f}));
    }
    {
      std::vector<Tensor> in{x}, out{Tensor::out({1, 2, 2})};
      RunResult r = run(FakeNode("Softmax", 11), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1 / 6.0f, 3 / 6.0f, 1 / 6.0f, 1 / 6.0f}));
    }
    {  // large values do not overflow
      std::vector<Tensor> in{Tensor::f32({2}, {1000, 1000})}, out{Tensor::out({2})};
      RunResult r = run(FakeNode("Softmax", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({0.5f, 0.5f}));
    }
  }

  TEST_CASE("Softmax matches the definition for every axis, both opset forms") {
    check_softmax_family("Softmax", false);
  }

  TEST_CASE("Softmax axis out of range") {
    std::vector<Tensor> in{Tensor::f32({2, 3})}, out{Tensor::out({2, 3})};
    mn_bid b = bid(FakeNode("Softmax", 13).set("axis", 2), in, out);
    CHECK(b.cost < 0);
    CHECK(std::string(b.reason).find("axis") != std::string::npos);
    RunOptions o;
    o.skip_bid = true;
    o.hide_dims_at_prepare = true;
    RunResult r = run(FakeNode("Softmax", 13).set("axis", -3), in, out, o);
    CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
  }

  TEST_CASE("LogSoftmax known answers and every axis, both opset forms") {
    std::vector<Tensor> in{Tensor::f32({3}, {1, 2, 3})}, out{Tensor::out({3})};
    RunResult r = run(FakeNode("LogSoftmax", 13), in, out);
    REQUIRE_MESSAGE(r.ok(), r.error);
    CHECK(r.kernel_name == "f32_logsoftmax_ref");
    CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({-2.4076059f, -1.4076059f, -0.4076059f}));
    // far-apart values: exp underflows, the log form must not give -inf
    std::vector<Tensor> in2{Tensor::f32({2}, {0, 200})}, out2{Tensor::out({2})};
    REQUIRE(run(FakeNode("LogSoftmax", 13), in2, out2).ok());
    CDT_CHECK_CLOSE(out2[0].f(), std::vector<float>({-200, 0}));
    check_softmax_family("LogSoftmax", true);
  }
}
