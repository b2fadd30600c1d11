#include "run_team.h"

#include <tbb/task_group.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

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

// The CPU this thread runs on, or -1 where the platform does not say.
int current_cpu() {
#if defined(__linux__)
  const int c = sched_getcpu();
  return c >= 0 ? c % RunTeam::kSpeedKeys : -1;
#else
  return -1;
#endif
}

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// How far one job's timings move a log speed: the host's slow phases last minutes, a run
// makes several parallel_parts calls, and one call's times are noisy.
constexpr float kLearnRate = 0.25f;
// Parts shorter than this are not timed into the speeds (clock and wake-up noise).
constexpr uint64_t kMinTimedNs = 20000;
// Speeds within this of their mean (in log terms, ~5 %) count as equal: one call's times
// vary by ~10 %, and parts sized by that noise would cost more than they save.
constexpr float kDeadZone = 0.05f;
// The thread of unit j of `units` split evenly over T threads (parallel_for's static
// split: the last t with units t / T <= j).
size_t owner_of(size_t j, size_t units, size_t T) { return ((j + 1) * T - 1) / units; }
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

void RunTeam::run_unit(uint32_t unit, int self) {
  size_t b = size_t(unit) * unit_, e = std::min(n_, b + unit_);
  uint64_t t0 = 0;
  if (part_fn_) {
    b = bounds_[unit];
    e = bounds_[unit + 1];
    if (b >= e) return;  // an empty part: nothing to run or time
    parts_[self].key.store(current_cpu(), std::memory_order_relaxed);
    t0 = now_ns();
  }
  tl_in_chunk = true;
  // mn_range_fn is a C function and should not throw (RunContext::parallel_for catches
  // what its chunks throw), but a unit that throws anyway must still be counted done, or
  // the caller would wait for it forever: the first exception is kept for the caller.
  try {
    if (part_fn_)
      part_fn_(user_, unit, b, e);
    else
      fn_(user_, b, e);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
  tl_in_chunk = false;
  if (part_fn_) {
    Part& mine = parts_[self];
    mine.part_items += e - b;
    mine.part_ns += now_ns() - t0;
  }
}

void RunTeam::work(uint32_t gen, int self) {
  Part& mine = parts_[self];
  uint32_t unit;
  uint64_t done = 0;
  while (claim_front(mine, gen, &unit)) {
    run_unit(unit, self);
    ++done;
  }
  // Then the others' parts from their back ends, the next thread first.
  for (int k = 1; k < threads_; ++k) {
    Part& other = parts_[(self + k) % threads_];
    while (claim_back(other, gen, &unit)) {
      run_unit(unit, self);
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

void RunTeam::start_job(size_t units) {
  const size_t T = size_t(threads_);
  expected_ += units;
  const uint32_t gen = gen_.load(std::memory_order_relaxed) + 1;
  for (size_t t = 0; t < T; ++t) {
    parts_[t].part_items = parts_[t].part_ns = 0;
    parts_[t].word.store(pack(gen, uint32_t(units * t / T), uint32_t(units * (t + 1) / T)), std::memory_order_relaxed);
  }
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

void RunTeam::parallel_for(size_t n, size_t grain, mn_range_fn fn, void* user) {
  if (n == 0) return;
  if (tl_in_chunk || tl_leader != this || threads_ <= 1) {
    fn(user, 0, n);
    return;
  }
  const size_t T = size_t(threads_);
  const size_t unit = std::max<size_t>({grain, 1, (n + T * kUnitsPerThread - 1) / (T * kUnitsPerThread)});
  fn_ = fn;
  part_fn_ = nullptr;
  user_ = user;
  n_ = n;
  unit_ = unit;
  start_job((n + unit - 1) / unit);
}

int RunTeam::key_of(int self) const {
  if (by_thread_) return self % kSpeedKeys;
  return self == 0 ? current_cpu() : parts_[self].key.load(std::memory_order_relaxed);
}

float* RunTeam::site_speeds(const void* site) const {
  return const_cast<float*>(log_speed_[(reinterpret_cast<uintptr_t>(site) >> 4) % kSpeedSites]);
}

size_t RunTeam::part_bounds(size_t n, size_t grain, size_t parts, size_t* bounds, const void* site) const {
  const float* ls = site_speeds(site);
  parts = std::max<size_t>(1, std::min(parts, kMaxParts));
  grain = std::max<size_t>(grain, 1);
  const size_t T = size_t(std::max(threads_, 1));
  // Each thread's log speed less their mean, within half of log kMaxSkew either way.
  float lw[kMaxThreads], mean = 0;
  for (size_t t = 0; t < T; ++t) {
    const int key = key_of(int(t));
    lw[t] = key >= 0 ? ls[key] : 0.0f;
    mean += lw[t] / float(T);
  }
  const float half = 0.5f * std::log(kMaxSkew);
  double total = 0, w[kMaxParts];
  for (size_t j = 0; j < parts; ++j) {
    const float l = lw[owner_of(j, parts, T)] - mean;
    total += w[j] = std::fabs(l) < kDeadZone ? 1.0 : std::exp(std::min(std::max(l, -half), half));
  }
  // Each bound at the multiple of the grain nearest its weighted share.
  bounds[0] = 0;
  double acc = 0;
  for (size_t j = 0; j < parts; ++j) {
    acc += w[j];
    const size_t b = j + 1 < parts ? size_t(double(n) * acc / total / double(grain) + 0.5) * grain : n;
    bounds[j + 1] = std::max(std::min(b, n), bounds[j]);
  }
  return parts;
}

void RunTeam::learn_speeds() {
  // Each timed thread's log rate (items a nanosecond) less the timed threads' mean: its
  // core's log speed moves that way from the mean of theirs, which stays where it was.
  const int T = threads_;
  float* ls = site_speeds(reinterpret_cast<const void*>(part_fn_));
  int keys[kMaxThreads], m = 0;
  float lr[kMaxThreads], mr = 0, mw = 0;
  for (int t = 0; t < T; ++t) {
    const Part& p = parts_[t];
    const int key = by_thread_ ? t % kSpeedKeys : p.key.load(std::memory_order_relaxed);
    if (p.part_items == 0 || p.part_ns < kMinTimedNs || key < 0) continue;
    for (int i = 0; i < m; ++i)
      if (keys[i] == key) return;  // two threads on one core: their times say nothing of it
    keys[m] = key;
    lr[m] = std::log(float(p.part_items) / float(p.part_ns));
    ++m;
  }
  for (int i = 0; i < m; ++i) {
    mr += lr[i] / float(m);
    mw += ls[keys[i]] / float(m);
  }
  for (int i = 0; m >= 2 && i < m; ++i) {
    float& l = ls[keys[i]];
    l += kLearnRate * (mw + lr[i] - mr - l);  // stays within the measured rates' spread
  }
}

void RunTeam::parts_inline(size_t n, size_t grain, size_t parts, mn_part_fn fn, void* user) {
  grain = std::max<size_t>(grain, 1);
  for (size_t j = 0; j < parts; ++j) {
    const size_t b = n * j / parts / grain * grain, e = j + 1 == parts ? n : n * (j + 1) / parts / grain * grain;
    if (b < e) fn(user, j, b, e);
  }
}

void RunTeam::parallel_parts(size_t n, size_t grain, size_t parts, mn_part_fn fn, void* user) {
  if (n == 0 || tl_in_chunk || tl_leader != this || threads_ <= 1) return parts_inline(n, grain, parts, fn, user);
  parts = part_bounds(n, grain, parts, bounds_, reinterpret_cast<const void*>(fn));
  fn_ = nullptr;
  part_fn_ = fn;
  user_ = user;
  n_ = n;
  unit_ = 1;
  start_job(parts);  // rethrows what a part threw
  learn_speeds();
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
