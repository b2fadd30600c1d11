// Memory planner properties over random lifetimes: no two live tensors overlap, the arena
// covers the largest live set and never exceeds the unshared sum, and in-place reuse
// happens exactly where it is allowed.
#include <doctest/doctest.h>

#include "planner.h"

#include <algorithm>
#include <random>

using namespace minnow;

namespace {

size_t align64(size_t v) { return (v + 63) / 64 * 64; }

void check_plan(const std::vector<BufferRequest>& req, const MemoryPlan& plan) {
  const size_t n = req.size();
  REQUIRE(plan.offsets.size() == n);
  size_t sum = 0;
  int steps = 0;
  for (const auto& r : req) sum += align64(r.size), steps = std::max(steps, r.last_use + 1);
  CHECK(plan.arena_size <= sum);
  for (size_t i = 0; i < n; ++i) {
    CHECK(plan.offsets[i] % 64 == 0);
    CHECK(plan.offsets[i] + req[i].size <= plan.arena_size);
  }
  // No overlap between tensors alive at the same step, except an in-place pair at the
  // step where the donor dies and the receiver is born.
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      bool live_together = req[i].first_use <= req[j].last_use && req[j].first_use <= req[i].last_use;
      if (!live_together || req[i].size == 0 || req[j].size == 0) continue;
      bool overlap = plan.offsets[i] < plan.offsets[j] + req[j].size && plan.offsets[j] < plan.offsets[i] + req[i].size;
      if (!overlap) continue;
      // Allowed only along an in-place chain.
      auto chained = [&](size_t a, size_t b) {
        for (int k = static_cast<int>(b); k >= 0; k = plan.shares_with[k])
          if (static_cast<size_t>(k) == a) return true;
        return false;
      };
      bool ok = chained(i, j) || chained(j, i);
      INFO("tensors " << i << " and " << j << " overlap");
      CHECK(ok);
    }
  // The arena holds the largest set of tensors alive at one step.
  for (int s = 0; s < steps; ++s) {
    size_t live = 0;
    for (size_t i = 0; i < n; ++i)
      if (req[i].first_use <= s && s <= req[i].last_use && plan.shares_with[i] < 0) live += req[i].size;
    CHECK(plan.arena_size >= live);
  }
}

}  // namespace

TEST_SUITE("planner") {
  TEST_CASE("a chain reuses two slots") {
    // t0 -> t1 -> t2 -> t3, each read only by the next step.
    std::vector<BufferRequest> req;
    for (int i = 0; i < 4; ++i) req.push_back({1000, i, i + 1, -1});
    MemoryPlan p = plan_memory(req);
    check_plan(req, p);
    CHECK(p.arena_size == 2 * align64(1000));
  }

  TEST_CASE("in-place where allowed, not where the input lives on") {
    std::vector<BufferRequest> req = {
        {4096, 0, 1, -1},  // 0: conv output, read by relu at step 1 only
        {4096, 1, 2, 0},   // 1: relu in place over 0: allowed
        {4096, 2, 4, 1},   // 2: relu over 1, but 1... dies at 2: allowed
        {4096, 3, 4, 2},   // 3: wants 2, which lives until 4: refused
    };
    MemoryPlan p = plan_memory(req);
    check_plan(req, p);
    CHECK(p.shares_with[1] == 0);
    CHECK(p.offsets[1] == p.offsets[0]);
    CHECK(p.shares_with[2] == 1);
    CHECK(p.shares_with[3] == -1);
    CHECK(p.offsets[3] != p.offsets[2]);
    // A bigger output cannot take a smaller input's place.
    std::vector<BufferRequest> grow = {{64, 0, 1, -1}, {128, 1, 2, 0}};
    CHECK(plan_memory(grow).shares_with[1] == -1);
  }

  TEST_CASE("random lifetimes") {
    std::mt19937 rng(42);
    for (int trial = 0; trial < 300; ++trial) {
      int n = 1 + static_cast<int>(rng() % 40);
      std::vector<BufferRequest> req(n);
      for (int i = 0; i < n; ++i) {
        req[i].first_use = i;
        req[i].last_use = i + static_cast<int>(rng() % 6);
        req[i].size = (rng() % 5 == 0) ? 0 : 1 + rng() % 5000;
        if (i > 0 && rng() % 3 == 0) req[i].inplace_of = static_cast<int>(rng() % i);
      }
      MemoryPlan p = plan_memory(req);
      check_plan(req, p);
    }
  }
}
