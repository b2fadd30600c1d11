#include "run_team.h"

#include <tbb/task_group.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

namespace minnow {

namespace {
// Set while a thread runs a chunk (a nested parallel_for runs inline), and on the thread
// inside RunTeam::run (only it may start jobs).
thread_local bool tl_in_chunk = false;
thread_local const RunTeam* tl_leader = nullptr;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Spins for about 200 us, then yields between checks: between two calls of one run the
// wait is microseconds, and with more threads than cores a spinning helper must not keep
// the thread it waits for off its core.
class Backoff {
 public:
  void pause() {
    if (++spins_ < 1024) {
      cpu_relax();
      return;
    }
    spins_ = 0;
    const auto now = std::chrono::steady_clock::now();
    if (start_ == std::chrono::steady_clock::time_point()) start_ = now;
    if (now - start_ > std::chrono::microseconds(200)) std::this_thread::yield();
  }

 private:
  int spins_ = 0;
  std::chrono::steady_clock::time_point start_{};
};

constexpr uint64_t pack(uint32_t gen, uint32_t begin, uint32_t end) {
  return (uint64_t(gen) << 32) | (uint64_t(begin) << 16) | uint64_t(end);
}
constexpr uint32_t gen_of(uint64_t w) { return uint32_t(w >> 32); }
constexpr uint32_t begin_of(uint64_t w) { return uint32_t(w >> 16) & 0xffffu; }
constexpr uint32_t end_of(uint64_t w) { return uint32_t(w) & 0xffffu; }
// Units per thread at most: enough for the stealing to even out a slow thread, few
// enough that claims (one CAS each) cost nothing next to a unit.
constexpr size_t kUnitsPerThread = 8;
}  // namespace

bool RunTeam::claim_front(Part& p, uint32_t gen, uint32_t* unit) {
  uint64_t w = p.word.load(std::memory_order_acquire);
  for (;;) {
    if (gen_of(w) != gen || begin_of(w) >= end_of(w)) return false;
    if (p.word.compare_exchange_weak(w, pack(gen, begin_of(w) + 1, end_of(w)), std::memory_order_acq_rel)) {
      *unit = begin_of(w);
      return true;
    }
  }
}

bool RunTeam::claim_back(Part& p, uint32_t gen, uint32_t* unit) {
  uint64_t w = p.word.load(std::memory_order_acquire);
  for (;;) {
    if (gen_of(w) != gen || begin_of(w) >= end_of(w)) return false;
    if (p.word.compare_exchange_weak(w, pack(gen, begin_of(w), end_of(w) - 1), std::memory_order_acq_rel)) {
      *unit = end_of(w) - 1;
      return true;
    }
  }
}

void RunTeam::run_unit(uint32_t unit) {
  const size_t b = size_t(unit) * unit_, e = std::min(n_, b + unit_);
  tl_in_chunk = true;
  // mn_range_fn is a C function and should not throw (RunContext::parallel_for catches
  // what its chunks throw), but a unit that throws anyway must still be counted done, or
  // the caller would wait for it forever: the first exception is kept for the caller.
  try {
    fn_(user_, b, e);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
  tl_in_chunk = false;
}

void RunTeam::work(uint32_t gen, int self) {
  Part& mine = parts_[self];
  uint32_t unit;
  uint64_t done = 0;
  while (claim_front(mine, gen, &unit)) {
    run_unit(unit);
    ++done;
  }
  // Then the others' parts from their back ends, the next thread first.
  for (int k = 1; k < threads_; ++k) {
    Part& other = parts_[(self + k) % threads_];
    while (claim_back(other, gen, &unit)) {
      run_unit(unit);
      ++done;
    }
  }
  if (done) mine.done.fetch_add(done, std::memory_order_release);
}

void RunTeam::helper() {
  const int self = joined_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (self >= threads_) return;
  uint32_t seen = first_gen_;
  for (;;) {
    Backoff backoff;
    uint32_t g;
    while ((g = gen_.load(std::memory_order_acquire)) == seen) {
      if (stop_.load(std::memory_order_acquire)) return;
      backoff.pause();
    }
    seen = g;
    work(g, self);
  }
}

void RunTeam::parallel_for(size_t n, size_t grain, mn_range_fn fn, void* user) {
  if (n == 0) return;
  if (tl_in_chunk || tl_leader != this || threads_ <= 1) {
    fn(user, 0, n);
    return;
  }
  const size_t T = size_t(threads_);
  const size_t unit = std::max<size_t>({grain, 1, (n + T * kUnitsPerThread - 1) / (T * kUnitsPerThread)});
  const size_t units = (n + unit - 1) / unit;
  fn_ = fn;
  user_ = user;
  n_ = n;
  unit_ = unit;
  expected_ += units;
  const uint32_t gen = gen_.load(std::memory_order_relaxed) + 1;
  for (size_t t = 0; t < T; ++t)
    parts_[t].word.store(pack(gen, uint32_t(units * t / T), uint32_t(units * (t + 1) / T)), std::memory_order_relaxed);
  gen_.store(gen, std::memory_order_release);
  work(gen, 0);
  Backoff backoff;
  for (;;) {
    uint64_t sum = 0;
    for (size_t t = 0; t < T; ++t) sum += parts_[t].done.load(std::memory_order_acquire);
    if (sum == expected_) break;
    backoff.pause();
  }
  if (error_) {
    std::exception_ptr e;
    std::swap(e, error_);  // every unit is done: no thread writes error_ any more
    std::rethrow_exception(e);
  }
}

void RunTeam::run(tbb::task_arena& arena, int threads, const std::function<void()>& body) {
  threads_ = std::min(std::max(threads, 1), kMaxThreads);
  if (threads_ <= 1) {
    body();
    return;
  }
  stop_.store(false, std::memory_order_relaxed);
  joined_.store(0, std::memory_order_relaxed);
  expected_ = 0;
  for (int t = 0; t < threads_; ++t) parts_[t].done.store(0, std::memory_order_relaxed);
  first_gen_ = gen_.load(std::memory_order_relaxed);
  arena.execute([&] {
    tbb::task_group helpers;
    for (int i = 1; i < threads_; ++i) helpers.run([this] { helper(); });
    tl_leader = this;
    struct Finish {
      RunTeam* team;
      tbb::task_group& helpers;
      ~Finish() {
        tl_leader = nullptr;
        team->stop_.store(true, std::memory_order_release);
        helpers.wait();
      }
    } finish{this, helpers};
    body();
  });
}

}  // namespace minnow
