// RunTeam (core/src/run_team.h): every index of every call run exactly once, whatever the
// thread count, grain and range; nested calls and calls from other threads run inline; a
// run whose helper threads never arrive still finishes every call. parallel_parts: parts
// contiguous, in order, on the grain, within MN_PARTS_MAX_SKEW of an even share, and sized
// toward the faster thread once one thread's parts run slower.
#include <doctest/doctest.h>

#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "minnow/plugin.hpp"
#include "run_team.h"

namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  std::atomic<int> bad_chunks{0};
  size_t grain = 1;
  explicit Counts(size_t n) : hits(n) {}
};

void count_range(void* user, size_t b, size_t e) {
  auto* c = static_cast<Counts*>(user);
  if (b >= e || e > c->hits.size()) c->bad_chunks.fetch_add(1);
  for (size_t i = b; i < e && i < c->hits.size(); ++i) c->hits[i].fetch_add(1, std::memory_order_relaxed);
}

void check_once(const Counts& c, size_t n, const std::string& what) {
  CHECK_MESSAGE(c.bad_chunks.load() == 0, what << ", n " << n);
  int wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += c.hits[i].load() != 1;
  CHECK_MESSAGE(wrong == 0, what << ", n " << n << ": " << wrong << " indices not run exactly once");
}

// What parallel_parts called: each part's [begin, end), and any part called twice or empty.
struct PartLog {
  std::vector<std::atomic<size_t>> begin, end;
  std::vector<std::atomic<int>> calls;
  explicit PartLog(size_t parts) : begin(parts), end(parts), calls(parts) {}
};

void log_part(void* user, size_t j, size_t b, size_t e) {
  auto* log = static_cast<PartLog*>(user);
  log->begin[j].store(b);
  log->end[j].store(e);
  log->calls[j].fetch_add(1);
}

// The parts cover [0, n) in order, each called once (or not at all when empty), each bound
// but the last on the grain, none above RunContext::max_part_items.
void check_parts(const PartLog& log, size_t n, size_t grain, size_t parts, const std::string& what) {
  const size_t most = minnow::plugin::RunContext::max_part_items(n, grain, parts);
  size_t at = 0;
  int wrong = 0;
  for (size_t j = 0; j < parts; ++j) {
    const int calls = log.calls[j].load();
    if (calls == 0) continue;  // an empty part
    const size_t b = log.begin[j].load(), e = log.end[j].load();
    wrong += calls != 1 || b != at || e <= b || e - b > most || (e != n && e % grain != 0);
    at = e;
  }
  CHECK_MESSAGE(wrong == 0, what << ": " << wrong << " parts wrong");
  CHECK_MESSAGE(at == n, what << ": the parts end at " << at << ", not " << n);
}

// A part that costs 100 ns an item on the caller's thread and 300 on any other.
struct Slow {
  std::thread::id caller;
  std::atomic<int> helper_parts{0};
};
void slow_part(void* user, size_t, size_t b, size_t e) {
  auto* s = static_cast<Slow*>(user);
  const bool helper = std::this_thread::get_id() != s->caller;
  if (helper) s->helper_parts.fetch_add(1);
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds((helper ? 300 : 100) * (e - b));
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

TEST_SUITE("run_team") {
  TEST_CASE("every index once, for many ranges, grains and thread counts, call after call") {
    for (int threads : {1, 2, 3, 4}) {
      tbb::task_arena arena(threads);
      minnow::RunTeam team;
      team.run(arena, threads, [&] {
        // Many calls back to back in one run: the helpers go from job to job.
        for (size_t n : {size_t(1), size_t(2), size_t(3), size_t(7), size_t(8), size_t(17), size_t(64), size_t(1000),
                         size_t(65535), size_t(100003)})
          for (size_t grain : {size_t(1), size_t(3), size_t(16), size_t(5000)}) {
            Counts c(n);
            team.parallel_for(n, grain, count_range, &c);
            check_once(c, n, "threads " + std::to_string(threads) + ", grain " + std::to_string(grain));
          }
      });
    }
  }

  TEST_CASE("a nested call runs its whole range inline, inside the chunk that made it") {
    tbb::task_arena arena(2);
    minnow::RunTeam team;
    constexpr size_t kOuter = 16, kInner = 33;
    struct Nest {
      minnow::RunTeam* team;
      std::vector<std::atomic<int>> hits = std::vector<std::atomic<int>>(kOuter * kInner);
      std::atomic<int> wrong_thread{0};
    } nest{&team};
    team.run(arena, 2, [&] {
      nest.team->parallel_for(kOuter, 1, [](void* u, size_t b, size_t e) {
        auto* s = static_cast<Nest*>(u);
        for (size_t o = b; o < e; ++o) {
          const std::thread::id me = std::this_thread::get_id();
          struct Inner {
            Nest* s;
            size_t o;
            std::thread::id me;
          } in{s, o, me};
          s->team->parallel_for(kInner, 1, [](void* u2, size_t b2, size_t e2) {
            auto* i = static_cast<Inner*>(u2);
            if (std::this_thread::get_id() != i->me) i->s->wrong_thread.fetch_add(1);
            for (size_t k = b2; k < e2; ++k) i->s->hits[i->o * kInner + k].fetch_add(1);
          }, &in);
        }
      }, &nest);
    });
    CHECK(nest.wrong_thread.load() == 0);
    for (size_t i = 0; i < kOuter * kInner; ++i) CHECK(nest.hits[i].load() == 1);
  }

  TEST_CASE("helpers that never arrive: the caller runs every part itself") {
    // An arena of one thread: the helper tasks can only start once the body is over, so
    // each call's parts are all taken by the caller.
    tbb::task_arena arena(1);
    minnow::RunTeam team;
    std::thread::id caller;
    std::atomic<int> elsewhere{0};
    struct Where {
      std::thread::id* caller;
      std::atomic<int>* elsewhere;
      Counts* c;
    };
    team.run(arena, 4, [&] {
      caller = std::this_thread::get_id();
      for (int call = 0; call < 50; ++call) {
        Counts c(257);
        Where w{&caller, &elsewhere, &c};
        team.parallel_for(257, 1, [](void* u, size_t b, size_t e) {
          auto* w = static_cast<Where*>(u);
          if (std::this_thread::get_id() != *w->caller) w->elsewhere->fetch_add(1);
          count_range(w->c, b, e);
        }, &w);
        check_once(c, 257, "no helpers");
      }
    });
    CHECK(elsewhere.load() == 0);
  }

  TEST_CASE("a call from a thread outside the run runs inline") {
    tbb::task_arena arena(2);
    minnow::RunTeam team;
    Counts c(100);
    team.parallel_for(100, 1, count_range, &c);  // no run at all
    check_once(c, 100, "outside any run");
    Counts d(100);
    team.run(arena, 2, [&] {
      std::thread other([&] { team.parallel_for(100, 7, count_range, &d); });
      other.join();
    });
    check_once(d, 100, "from another thread");
  }

  TEST_CASE("an exception thrown by a chunk on any thread reaches the caller; later calls still work") {
    tbb::task_arena arena(2);
    minnow::RunTeam team;
    for (int r = 0; r < 20; ++r) {
      team.run(arena, 2, [&] {
        CHECK_THROWS_AS(team.parallel_for(64, 1, [](void*, size_t, size_t e) {
          if (e == 64) throw std::runtime_error("chunk failed");
        }, nullptr), std::runtime_error);
        Counts c(64);
        team.parallel_for(64, 1, count_range, &c);
        check_once(c, 64, "after a failed call");
      });
    }
  }

  TEST_CASE("runs back to back and an exception from the body leave the team usable") {
    tbb::task_arena arena(2);
    minnow::RunTeam team;
    for (int r = 0; r < 200; ++r) {
      Counts c(31);
      team.run(arena, 2, [&] { team.parallel_for(31, 1, count_range, &c); });
      check_once(c, 31, "run after run");
    }
    CHECK_THROWS_AS(team.run(arena, 2, [&] { throw std::runtime_error("body failed"); }), std::runtime_error);
    Counts c(99);
    team.run(arena, 2, [&] { team.parallel_for(99, 2, count_range, &c); });
    check_once(c, 99, "after an exception");
  }

  TEST_CASE("parallel_parts: contiguous parts in order, on the grain, within the skew, call after call") {
    for (int threads : {1, 2, 3, 4}) {
      tbb::task_arena arena(threads);
      minnow::RunTeam team;
      team.run(arena, threads, [&] {
        for (size_t n : {size_t(1), size_t(2), size_t(5), size_t(32), size_t(55), size_t(167), size_t(1000)})
          for (size_t grain : {size_t(1), size_t(3), size_t(16)})
            for (size_t parts : {size_t(1), size_t(2), size_t(3), size_t(4), size_t(8)}) {
              PartLog log(parts);
              team.parallel_parts(n, grain, parts, log_part, &log);
              check_parts(log, n, grain, parts,
                          "threads " + std::to_string(threads) + ", n " + std::to_string(n) + ", grain " +
                              std::to_string(grain) + ", parts " + std::to_string(parts));
            }
      });
    }
    // Outside any run, and nested in a chunk: even parts on the calling thread.
    minnow::RunTeam team;
    PartLog log(3);
    team.parallel_parts(10, 1, 3, log_part, &log);
    check_parts(log, 10, 1, 3, "outside a run");
    CHECK(log.end[0].load() == 3);  // even: 10 * 1 / 3
  }

  TEST_CASE("parallel_parts moves items from a slow thread's part to a fast one's, up to the skew") {
    // Keyed by thread (the test cannot place threads on cores): the helper's items cost 3x
    // the caller's, so the caller's part grows call by call, up to MN_PARTS_MAX_SKEW.
    tbb::task_arena arena(2);
    minnow::RunTeam team;
    team.key_speeds_by_thread(true);
    Slow slow;
    size_t before[3] = {}, after[3] = {};
    team.run(arena, 2, [&] {
      slow.caller = std::this_thread::get_id();
      team.part_bounds(600, 1, 2, before, reinterpret_cast<const void*>(&slow_part));
      for (int call = 0; call < 60; ++call)
        team.parallel_parts(600, 1, 2, slow_part, &slow);
      team.part_bounds(600, 1, 2, after, reinterpret_cast<const void*>(&slow_part));
    });
    CHECK(before[1] == 300);  // nothing measured yet: even
    if (slow.helper_parts.load() < 30) {
      MESSAGE("the helper ran only " << slow.helper_parts.load() << " of 60 parts: nothing to learn from");
      return;
    }
    // The skew's most for two threads: the caller 1.5 / (1.5 + 1) of 600 = 360 at sqrt(1.5)
    // each way (the weights are clamped around their mean).
    CHECK(after[1] > 340);
    // Speeds are per call site: another function's parts are still even.
    size_t other[3] = {};
    team.part_bounds(600, 1, 2, other, reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(&slow_part) + 16));
    CHECK(other[1] == 300);
    CHECK(after[1] <= minnow::plugin::RunContext::max_part_items(600, 1, 2));
  }

  TEST_CASE("an exception thrown by a part reaches the caller; later calls still work") {
    tbb::task_arena arena(2);
    minnow::RunTeam team;
    team.run(arena, 2, [&] {
      CHECK_THROWS_AS(team.parallel_parts(64, 1, 2, [](void*, size_t j, size_t, size_t) {
        if (j == 1) throw std::runtime_error("part failed");
      }, nullptr), std::runtime_error);
      PartLog log(2);
      team.parallel_parts(64, 1, 2, log_part, &log);
      check_parts(log, 64, 1, 2, "after a failed call");
    });
  }
}
