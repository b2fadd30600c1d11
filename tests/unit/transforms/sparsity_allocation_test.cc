// allocate_sparsity: the per-layer choice behind distill's allocate=sensitivity.
#include "sparsity_allocation.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <stdexcept>
#include <vector>

using minnow::compress::allocate_sparsity;
using minnow::compress::SensitivityCurve;

namespace {
double mean_sparsity(const std::vector<SensitivityCurve>& c, const std::vector<double>& s) {
  double z = 0, n = 0;
  for (size_t l = 0; l < c.size(); ++l) {
    z += s[l] * double(c[l].size);
    n += double(c[l].size);
  }
  return z / n;
}
}  // namespace

TEST_SUITE("sparsity_allocation") {
  TEST_CASE("the cheap layer is pruned first, and the total lands on the target") {
    // A large layer that costs little and a small one that costs much (lenet5's fc1 and
    // conv2): the target is met from the large one alone while it can be.
    std::vector<SensitivityCurve> c(2);
    c[0] = {48000, 0.0, {0.5, 0.9, 0.98}, {0.001, 0.01, 0.2}};
    c[1] = {2400, 0.0, {0.5, 0.9, 0.98}, {0.05, 0.5, 2.0}};
    std::vector<double> s = allocate_sparsity(c, 0.8);
    CHECK(s[1] == doctest::Approx(0.0));
    CHECK(s[0] == doctest::Approx(0.8 * 50400 / 48000));
    CHECK(mean_sparsity(c, s) == doctest::Approx(0.8));
  }
  TEST_CASE("a steep step followed by a flat stretch is judged over the whole jump") {
    // Layer 0: 0.5 costs 1.0 but 0.98 costs the same: per weight removed, the jump to
    // 0.98 is cheaper than layer 1's first step, which a one-level greedy would miss.
    std::vector<SensitivityCurve> c(2);
    c[0] = {1000, 0.0, {0.5, 0.98}, {1.0, 1.0}};
    c[1] = {1000, 0.0, {0.5, 0.98}, {0.9, 5.0}};
    std::vector<double> s = allocate_sparsity(c, 0.49);
    CHECK(s[0] == doctest::Approx(0.98));
    CHECK(s[1] == doctest::Approx(0.0));
  }
  TEST_CASE("layers keep the zeros they come with; an unreachable target ends at the last levels") {
    std::vector<SensitivityCurve> c(2);
    c[0] = {100, 0.4, {0.5, 0.9}, {0.1, 0.2}};
    c[1] = {300, 0.2, {0.3, 0.5}, {0.0, 0.3}};
    std::vector<double> s = allocate_sparsity(c, 0.0);
    CHECK(s[0] == doctest::Approx(0.4));
    CHECK(s[1] == doctest::Approx(0.2));
    s = allocate_sparsity(c, 0.99);
    CHECK(s[0] == doctest::Approx(0.9));
    CHECK(s[1] == doctest::Approx(0.5));
    // Negative measured costs (noise) count as free, not as a gain.
    c[1].cost = {-0.01, -0.02};
    s = allocate_sparsity(c, 0.35);
    CHECK(s[1] > 0.2);
    CHECK(mean_sparsity(c, s) == doctest::Approx(0.35));
  }
  TEST_CASE("max_cost stops the allocation short of the target where the predicted cost reaches it") {
    std::vector<SensitivityCurve> c(2);
    c[0] = {1000, 0.0, {0.5, 0.9}, {0.1, 0.5}};
    c[1] = {1000, 0.0, {0.5, 0.9}, {0.2, 1.0}};
    double cost = -1;
    // Unlimited, 80 % overall: layer 0 to 0.5 (0.1), layer 1 to 0.5 (0.2), layer 0 to 0.9
    // (0.4), then layer 1 half of the way to 0.9 (0.4 of 0.8): 1.1 in all.
    std::vector<double> s = allocate_sparsity(c, 0.8, -1, &cost);
    CHECK(mean_sparsity(c, s) == doctest::Approx(0.8));
    CHECK(s[0] == doctest::Approx(0.9));
    CHECK(s[1] == doctest::Approx(0.7));
    CHECK(cost == doctest::Approx(1.1));
    // A budget of 0.2: layer 0 to 0.5 (0.1), then layer 1 half of the way to 0.5 (0.1 of 0.2).
    s = allocate_sparsity(c, 0.8, 0.2, &cost);
    CHECK(cost == doctest::Approx(0.2));
    CHECK(s[0] == doctest::Approx(0.5));
    CHECK(s[1] == doctest::Approx(0.25));
    // A budget the target does not reach changes nothing.
    std::vector<double> free_run = allocate_sparsity(c, 0.8, 10.0, &cost);
    CHECK(free_run == allocate_sparsity(c, 0.8));
    CHECK(allocate_sparsity(c, 0.8, 0.0)[0] == doctest::Approx(0.0));
  }
  TEST_CASE("mismatched curves are refused") {
    std::vector<SensitivityCurve> c(1);
    c[0] = {10, 0.0, {0.5, 0.9}, {0.1}};
    CHECK_THROWS_AS(allocate_sparsity(c, 0.5), std::invalid_argument);
  }
}
