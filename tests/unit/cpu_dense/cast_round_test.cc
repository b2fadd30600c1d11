// Cast to float16 / bfloat16 inside the float32 engine: the values must be those the
// narrow type holds (round to nearest even, overflow to infinity, subnormals, NaN).
// Expected values are worked out by hand from the formats (10 / 7 mantissa bits).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "test_util.h"

using namespace cdt;

namespace {

std::vector<float> cast_round(const std::vector<float>& x, const char* to) {
  std::vector<Tensor> in{Tensor::f32({static_cast<int64_t>(x.size())}, x)};
  std::vector<Tensor> out{Tensor::out({static_cast<int64_t>(x.size())})};
  FakeNode node("Cast", 13);
  node.set("to", 1).set("round_to", to);
  RunResult r = run(node, in, out);
  REQUIRE_MESSAGE(r.ok(), r.error);
  return out[0].floats();
}

}  // namespace

TEST_SUITE("cast_round") {
  TEST_CASE("Cast rounds to float16") {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> got = cast_round({1.0f / 3, 2049, 2051, -2051, 65519, 65520, -1e6f, 1e-8f, 3e-8f,
                                         6.1e-5f, inf, -inf, NAN},
                                        "float16");
    const std::vector<float> want = {0.333251953125f, 2048, 2052, -2052, 65504, inf, -inf, 0.0f,
                                     5.9604644775390625e-08f, 1023.0f / 16777216.0f, inf, -inf};  // 6.1e-5: subnormal, 1023 steps
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i] == want[i]);
    }
    CHECK(std::isnan(got.back()));
  }

  TEST_CASE("Cast rounds to bfloat16") {
    std::vector<float> got =
        cast_round({1.0f / 3, 1.00390625f, 1.01171875f, -3.0e38f, 3.4e38f, NAN}, "bfloat16");
    CHECK(got[0] == 0.333984375f);
    CHECK(got[1] == 1.0f);        // tie between 1 and 1 + 2^-7: even
    CHECK(got[2] == 1.015625f);   // tie between 1 + 2^-7 and 1 + 2^-6: even
    CHECK(std::isfinite(got[3]));
    CHECK(std::isinf(got[4]));
    CHECK(std::isnan(got[5]));
  }

  TEST_CASE("round_to needs float32 -> float32 and a known type") {
    std::vector<Tensor> in{Tensor::f32({2}, {1, 2})};
    std::vector<Tensor> out{Tensor::out({2})};
    FakeNode node("Cast", 13);
    node.set("to", 1).set("round_to", "float8");
    CHECK_FALSE(run(node, in, out).ok());
  }
}
