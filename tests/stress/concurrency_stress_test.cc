// 8 sessions on one shared PreparedModel, each with a 2-thread arena, run 1000 inputs
// (different values and batch sizes, so sessions re-plan while others run) from 8 threads
// at once (1000 runs in all, handed out dynamically; batches 2-8 split the Gemm rows over
// both threads of the session's arena); every output must equal, bit for bit, the output of a single-threaded session
// run alone. Built under ThreadSanitizer by `make test-tsan`.
#include <doctest/doctest.h>

#include <minnow/minnow.h>

#include "test_util.h"

#include <atomic>
#include <cstring>
#include <thread>

using namespace minnow;

namespace {

constexpr int kSessions = 8;
constexpr int kThreadsPerSession = 2;
constexpr int kRuns = 1000;

// Input of run i: batch 1..8 (changes shape, so plans change too) and values from seed i.
Tensor input_for(int i, Shape per_sample) {
  Shape s{1 + i % 8};
  s.insert(s.end(), per_sample.begin(), per_sample.end());
  return test::random_tensor(s, 7000 + i);
}

void stress(std::shared_ptr<const PreparedModel> pm, Shape per_sample) {
  // Reference: one single-threaded session, runs one after the other.
  std::vector<Tensor> expected;
  {
    auto s = Session::create(pm, {}).value();
    for (int i = 0; i < kRuns; ++i) {
      auto out = s->run({input_for(i, per_sample)});
      REQUIRE_MESSAGE(out.is_ok(), out.status().message());
      expected.push_back(std::move(out.value()[0]));
    }
  }
  std::vector<std::unique_ptr<Session>> sessions;
  SessionOptions o;
  o.threads = kThreadsPerSession;
  for (int k = 0; k < kSessions; ++k) sessions.push_back(Session::create(pm, o).value());
  std::atomic<int> next{0}, mismatches{0}, failures{0}, done{0};
  std::vector<std::string> first_error(kSessions);
  std::vector<int> runs_of(kSessions, 0);  // each written by its own thread only
  std::vector<std::thread> threads;
  for (int k = 0; k < kSessions; ++k)
    threads.emplace_back([&, k] {
      // Runs are handed out dynamically, so which session runs which input varies.
      for (int i = next++; i < kRuns; i = next++) {
        auto out = sessions[k]->run({input_for(i, per_sample)});
        if (!out.is_ok()) {
          if (failures++ == 0) first_error[k] = out.status().message();
          continue;
        }
        const Tensor& got = out.value()[0];
        if (got.shape() != expected[i].shape() || std::memcmp(got.raw(), expected[i].raw(), got.bytes()) != 0) ++mismatches;
        ++done;
        ++runs_of[k];
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : first_error) CHECK_MESSAGE(e.empty(), e);
  CHECK(failures == 0);
  CHECK(mismatches == 0);
  CHECK(done == kRuns);
  // Every session took part (runs are handed out dynamically, so this is not a given).
  for (int k = 0; k < kSessions; ++k) CHECK_MESSAGE(runs_of[k] > 0, "session " << k << " ran nothing");
}

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("MLP: 8 sessions x 2 threads, 1000 runs, bit-identical to single-threaded") {
    test::Mlp mlp(11);
    auto pm = test::make_engine()->prepare(mlp.builder(true).build().value());
    REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
    stress(pm.value(), {1, 784});
  }

  TEST_CASE("CNN: 8 sessions x 2 threads, 1000 runs, bit-identical to single-threaded") {
    // The CNN's input is fixed at batch 1; a symbolic-batch copy of it exercises re-planning.
    test::Cnn cnn(5);
    ModelBuilder b = cnn.builder();
    auto& info = b.ir().graph.tensors[b.ir().graph.inputs[0]];
    info.shape[0] = ir::Dim{-1, "N"};
    // Reshape to [1, 54] would pin the batch; flatten from axis 1 instead.
    for (auto& n : b.ir().graph.nodes)
      if (n.op == "Reshape") {
        n.op = "Flatten";
        n.inputs.resize(1);
        n.attributes = {Attr::Int("axis", 1)};
      }
    auto pm = test::make_engine()->prepare(b.build().value());
    REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
    stress(pm.value(), {1, 12, 12});
  }
}
