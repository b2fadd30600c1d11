// A misbehaving plugin (fault_plugin.cc) must fail only the run or the prepare that hits
// it, with a message naming the plugin, the node and the op; the process, the engine and
// other sessions carry on.
#include <doctest/doctest.h>

#include <minnow/minnow.h>

#include "test_util.h"

#include <atomic>
#include <cstring>
#include <thread>

using namespace minnow;

namespace {

std::shared_ptr<Engine> fault_engine() {
  EngineOptions o;
  o.plugin_paths = {MINNOW_FAULT_PLUGIN};
  o.use_environment = false;
  o.use_default_folder = false;
  auto e = Engine::create(o);
  REQUIRE_MESSAGE(e.is_ok(), e.status().message());
  return e.value();
}

// x[3] -> fault::<op> (node "<op>_node") -> y. (A small rank-1 float input counts as
// shape-like, so planning errors wait for its value; the size tests use rank 2.)
std::shared_ptr<const Model> one_op(const std::string& op, Shape shape = {3}) {
  ModelBuilder b(op);
  b.add_input("x", DataType::kFloat32, shape);
  b.add_node(op, {"x"}, {"y"}, {}, op + "_node", "fault", 1);
  b.add_output("y");
  auto m = b.build();
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  return m.value();
}

void check_names(const std::string& m, const std::string& op) {
  CHECK_MESSAGE(m.find("fault_plugin") != std::string::npos, m);
  CHECK_MESSAGE(m.find("'" + op + "_node'") != std::string::npos, m);
  CHECK_MESSAGE(m.find("fault::" + op) != std::string::npos, m);
}

Tensor input3() { return Tensor::from_vector<float>({3}, {1, -2, 3}); }

}  // namespace

TEST_SUITE("plugin_faults") {
  TEST_CASE("run-time faults fail the run, name plugin, node and op, and can be repeated") {
    auto e = fault_engine();
    struct Case {
      const char* op;
      const char* says;
    } cases[] = {{"Throw", "exception escaped the kernel"},
                 {"Error", "the kernel refuses to run"},
                 {"BadShape", "kernel reported output 0 ('y') as [6] float32, but the op's shape function declared [3]"}};
    for (const auto& c : cases) {
      CAPTURE(c.op);
      auto pm = e->prepare(one_op(c.op));
      REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
      auto s = Session::create(pm.value()).value();
      for (int round = 0; round < 2; ++round) {  // the second run sees the same, restored state
        auto out = s->run({input3()});
        REQUIRE_FALSE(out.is_ok());
        check_names(out.status().message(), c.op);
        CHECK_MESSAGE(out.status().message().find(c.says) != std::string::npos, out.status().message());
      }
    }
  }

  TEST_CASE("prepare-time faults refuse the model with plugin, node and op named") {
    auto e = fault_engine();
    for (const char* op : {"NullKernel", "PrepareFails", "PrepareThrows", "ShapeThrows"}) {
      CAPTURE(op);
      auto pm = e->prepare(one_op(op));
      REQUIRE_FALSE(pm.is_ok());
      check_names(pm.status().message(), op);
    }
    CHECK(e->prepare(one_op("NullKernel")).status().message().find("backend returned no kernel") != std::string::npos);
    CHECK(e->prepare(one_op("PrepareFails")).status().message().find("cannot prepare node") != std::string::npos);
    CHECK(e->prepare(one_op("PrepareThrows")).status().message().find("exception escaped prepare") != std::string::npos);
    CHECK(e->prepare(one_op("ShapeThrows")).status().message().find("exception escaped the shape function") != std::string::npos);
  }

  TEST_CASE("an op no loaded plugin provides is refused at prepare with its name and a hint") {
    auto e = fault_engine();
    auto pm = e->prepare(one_op("Missing"));
    REQUIRE_FALSE(pm.is_ok());
    CHECK_MESSAGE(pm.status().message().find("fault::Missing") != std::string::npos, pm.status().message());
    CHECK_MESSAGE(pm.status().message().find("MINNOW_PLUGIN_PATH") != std::string::npos, pm.status().message());
  }

  TEST_CASE("a kernel asking for absurd scratch is refused before allocating") {
    auto e = fault_engine();
    auto s = Session::create(e->prepare(one_op("HugeScratch", {2, 3})).value());
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == StatusCode::kResourceExhausted);
    CHECK_MESSAGE(s.status().message().find("'HugeScratch_node'") != std::string::npos, s.status().message());
    CHECK(s.status().message().find("scratch") != std::string::npos);
  }

  TEST_CASE("a shape function declaring an overflowing shape is refused before allocating") {
    auto e = fault_engine();
    auto pm = e->prepare(one_op("HugeShape", {2, 3}));
    REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
    auto s = Session::create(pm.value());
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == StatusCode::kResourceExhausted);
    CHECK_MESSAGE(s.status().message().find("'HugeShape_node'") != std::string::npos, s.status().message());
  }

  TEST_CASE("other sessions keep running correctly while faulty ones fail") {
    auto e = fault_engine();
    auto good = e->prepare(one_op("Identity", {1024})).value();
    std::atomic<bool> stop{false};
    std::atomic<int> good_runs{0}, bad_outputs{0}, errors{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w)
      workers.emplace_back([&, w] {
        auto s = Session::create(good, {}).value();
        uint64_t seed = 100 * w;
        int mine = 0;
        while (!stop || mine++ < 50) {  // each worker overlaps the faults and runs >= 50 times
          Tensor x = test::random_tensor({1024}, ++seed);
          auto out = s->run({x});
          if (!out.is_ok()) { ++errors; break; }
          if (std::memcmp(out.value()[0].raw(), x.raw(), x.bytes()) != 0) ++bad_outputs;
          ++good_runs;
        }
      });
    for (int i = 0; i < 50; ++i)
      for (const char* op : {"Throw", "Error", "BadShape"}) {
        auto s = Session::create(e->prepare(one_op(op)).value()).value();
        CHECK_FALSE(s->run({input3()}).is_ok());
      }
    stop = true;
    for (auto& t : workers) t.join();
    CHECK(errors == 0);
    CHECK(bad_outputs == 0);
    CHECK(good_runs >= 100);
  }
}
