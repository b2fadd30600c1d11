// The vectorised LSTM cell (plugins/ops_lstm/lstm_cell_hwy.cc) against the scalar
// reference (cells.h) over hidden sizes around every vector width, with and without clip,
// peepholes and input_forget, and inputs reaching the saturated ends of sigmoid and tanh.
#include "lstm_cell.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace minnow::ops_lstm;

TEST_CASE("lstm_step_simd matches lstm_step") {
  MESSAGE("LSTM cell SIMD target: " << std::string(lstm_simd_target()));
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  Activation sig, th;
  sig.kind = ActKind::kSigmoid;
  th.kind = ActKind::kTanh;
  float worst = 0;
  for (int64_t H : {1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 256, 257}) {
    for (int variant = 0; variant < 6; ++variant) {
      const float scale = variant == 5 ? 40.f : 1.f;  // saturation
      const size_t h = static_cast<size_t>(H);
      std::vector<float> xw(4 * h), hr(4 * h), bias(4 * h), peep(3 * h), c(h);
      for (auto* v : {&xw, &hr, &bias, &peep, &c})
        for (float& x : *v) x = u(g) * scale;
      LstmParams p{H, bias.data(), variant & 1 ? peep.data() : nullptr, variant == 2 ? 1.5f : 0.f, variant == 4, sig, th, th};
      REQUIRE(lstm_simd_applies(p));
      std::vector<float> c_ref = c, c_simd = c, h_ref(h), h_simd(h);
      lstm_step(p, xw.data(), hr.data(), c_ref.data(), h_ref.data());
      lstm_step_simd(p, xw.data(), hr.data(), c_simd.data(), h_simd.data());
      for (int64_t j = 0; j < H; ++j) {
        CAPTURE(H);
        CAPTURE(variant);
        CAPTURE(j);
        const float dc = std::fabs(c_ref[size_t(j)] - c_simd[size_t(j)]) / std::max(1.f, std::fabs(c_ref[size_t(j)]));
        const float dh = std::fabs(h_ref[size_t(j)] - h_simd[size_t(j)]);
        CHECK(dc <= 2e-6f);
        CHECK(dh <= 2e-6f);
        worst = std::max(worst, std::max(dc, dh));
      }
    }
  }
  MESSAGE("max difference to the reference: " << worst);
  Activation relu;
  relu.kind = ActKind::kRelu;
  LstmParams other{4, nullptr, nullptr, 0.f, false, sig, relu, th};
  CHECK_FALSE(lstm_simd_applies(other));  // other activations take the reference path
}
