// The threads of one Session::run as a team that stays awake between parallel_for calls.
//
// A model runs dozens of parallel_for calls back to back (two or three per convolution),
// each a few to a few hundred microseconds long. Through tbb::parallel_for every call
// spawned tasks that the other threads had to notice and steal; on a 2-vCPU guest that
// cost ~3 us a call, and in about one call in ten the caller had finished every chunk
// before a worker came, so the layer ran on one thread. Here the run enters the session's
// oneTBB arena once, puts one long task on each of its other threads, and those threads
// spin (then yield) on a job counter until the run ends.
//
// Each call's range is split up front into one contiguous part per thread, in thread
// order, so that thread t takes the same part of every layer (the rows it wrote in one
// layer are the rows it reads in the next, from its own cache); a thread that finishes
// its part takes chunks from the back of the others' parts. A thread that never arrived
// (the arena was busy elsewhere) leaves its part to the others: no call waits for a thread
// to start.
//
// parallel_parts splits a range into a few parts of fixed cost, one or more per thread,
// sized by the speeds measured for the threads' cores (part_bounds, learn_speeds): on a
// guest whose host slows one vCPU to 0.7x for minutes, or on a big.LITTLE phone, two even
// halves finish when the slow one does, and with only one or two parts per thread the
// fast thread has no whole part left to take.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>

#include <tbb/task_arena.h>

#include "minnow/plugin.h"


namespace minnow {

class RunTeam {
 public:
  static constexpr int kMaxThreads = 64;
  // Runs body on the calling thread inside `arena` with threads - 1 helpers of the arena's
  // spinning; parallel_for calls made by body (on the calling thread) use them.
  void run(tbb::task_arena& arena, int threads, const std::function<void()>& body);
  // From the thread that called run, inside body: fn over [0, n) in chunks of at least
  // `grain` (except the last of each part), returning once every chunk is done. Called
  // from inside a chunk (a nested call), it runs the whole range on the calling thread.
  void parallel_for(size_t n, size_t grain, mn_range_fn fn, void* user);
  // From the thread that called run, inside body: fn(user, j, begin, end) for `parts`
  // contiguous parts of [0, n) (mn_run_ctx.parallel_parts), part j run by the thread that
  // parallel_for(parts) would give unit j unless another finishes first and takes it. The
  // parts are sized by part_bounds; each thread times the parts it runs, and the run's
  // speeds follow those times. Nested, or with one thread: even parts on the caller.
  void parallel_parts(size_t n, size_t grain, size_t parts, mn_part_fn fn, void* user);
  // Even parts, in order, on the calling thread (nested calls, one thread).
  static void parts_inline(size_t n, size_t grain, size_t parts, mn_part_fn fn, void* user);
  // The bounds (parts + 1 of them, 0 first, n last) the next parallel_parts(n, grain,
  // parts) takes: part j's share of n in proportion to the speed of its thread's core,
  // the speeds within kMaxSkew of each other, each bound but the last a multiple of grain.
  // Returns the parts (1 to kMaxParts) it split into. `site`: the call's function (speeds
  // are kept per call site: a core the host slows runs memory-bound transforms slower
  // than FMA-bound tiles).
  size_t part_bounds(size_t n, size_t grain, size_t parts, size_t* bounds, const void* site) const;
  // Speeds are kept per CPU (the core a thread ran its last part on), as the host slows
  // cores, not threads; tests key them by the team's thread index instead.
  void key_speeds_by_thread(bool on) { by_thread_ = on; }

  static constexpr float kMaxSkew = float(MN_PARTS_MAX_SKEW);
  static constexpr int kSpeedKeys = 256;
  static constexpr int kSpeedSites = 8;  // call sites, by their function's address

 private:
  struct alignas(64) Part {
    // gen (32 bits) | begin (16) | end (16), in units of `unit_` items: a claim is a CAS
    // that must see this job's gen, so a helper late by a job can take nothing from the
    // next one's parts with the last one's function.
    std::atomic<uint64_t> word{0};
    std::atomic<uint64_t> done{0};  // units this thread finished, over all jobs of the run
    // This job's parts (parallel_parts) as this thread ran them: items and nanoseconds,
    // and the speed key (CPU) it ran them on. Written by the thread, read by the caller
    // once every unit is done.
    uint64_t part_items = 0, part_ns = 0;
    std::atomic<int> key{-1};
  };
  void helper();
  void work(uint32_t gen, int self);
  bool claim_front(Part& p, uint32_t gen, uint32_t* unit);
  bool claim_back(Part& p, uint32_t gen, uint32_t* unit);
  void run_unit(uint32_t unit, int self);
  int key_of(int self) const;
  void learn_speeds();
  void start_job(size_t units);

  int threads_ = 1;
  std::atomic<uint32_t> gen_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> joined_{0};
  uint32_t first_gen_ = 0;  // gen_ when the run began: a helper works on any later one
  // The job: written by the caller before it publishes gen_.
  mn_range_fn fn_ = nullptr;
  void* user_ = nullptr;
  size_t n_ = 0, unit_ = 1;
  // A parallel_parts job: its function and bounds (unit j = items [bounds_[j], bounds_[j + 1])).
  mn_part_fn part_fn_ = nullptr;
  static constexpr size_t kMaxParts = 4 * kMaxThreads;
  size_t bounds_[kMaxParts + 1] = {};
  bool by_thread_ = false;
  // Log relative speeds by call site and key (0: never measured). Read and written by the
  // caller only (part_bounds, learn_speeds), between jobs.
  float log_speed_[kSpeedSites][kSpeedKeys] = {};
  float* site_speeds(const void* site) const;
  uint64_t expected_ = 0;  // sum of every Part::done once this job is finished
  std::mutex error_mutex_;
  std::exception_ptr error_;  // the first exception a unit of the current job threw
  Part parts_[kMaxThreads];
};

}  // namespace minnow
