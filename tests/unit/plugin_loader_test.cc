// Plugin loading: a good plugin, and each refusal with its message.
#include <doctest/doctest.h>

#include <minnow/minnow.h>

#include "registry.h"
#include "test_util.h"

#include <cstdlib>

using namespace minnow;

namespace {

std::shared_ptr<Engine> bare_engine() {
  EngineOptions o;
  o.use_environment = false;
  o.use_default_folder = false;
  return Engine::create(o).value();
}

std::string tp(const std::string& rel) { return test::test_plugin_dir() + "/" + rel; }

}  // namespace

TEST_SUITE("plugin_loader") {
  TEST_CASE("a good plugin loads and says what it provides") {
    auto e = bare_engine();
    Status s = e->load_plugin(tp("test_plugin.so"));
    REQUIRE_MESSAGE(s.is_ok(), s.message());
    auto plugins = e->plugins();
    REQUIRE(plugins.size() == 1);
    CHECK(plugins[0].name == "test_plugin");
    CHECK(plugins[0].version == "1.2.3");
    CHECK(plugins[0].path.find("test_plugin.so") != std::string::npos);
    auto& p = plugins[0].provides;
    CHECK(std::find(p.begin(), p.end(), "backend:test_backend") != p.end());
    CHECK(std::find(p.begin(), p.end(), "op:test::AddConst") != p.end());
  }

  TEST_CASE("wrong ABI major is refused") {
    auto e = bare_engine();
    Status s = e->load_plugin(tp("bad/abi_major_plugin.so"));
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.message().find("abi_major_plugin.so") != std::string::npos);
    CHECK(s.message().find("ABI " + std::to_string(MINNOW_ABI_MAJOR + 1) + ".0") != std::string::npos);
    CHECK(s.message().find("major versions differ") != std::string::npos);
    CHECK(e->plugins().empty());
  }

  TEST_CASE("a newer ABI minor is refused") {
    auto e = bare_engine();
    Status s = e->load_plugin(tp("bad/abi_minor_plugin.so"));
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.message().find("abi_minor_plugin.so") != std::string::npos);
    CHECK(s.message().find("newer than this host's ABI") != std::string::npos);
  }

  TEST_CASE("a plugin built for ABI 1.1 loads: its shorter op definition is read up to struct_size") {
    REQUIRE(MINNOW_ABI_MINOR >= 2);  // 1.2 appended mn_op_def.value_inputs, run-time dims
    auto e = test::make_engine({tp("old/abi_1_1_plugin.so")});
    bool found = false;
    for (const auto& p : e->plugins())
      if (p.name == "abi_1_1_plugin") found = std::find(p.provides.begin(), p.provides.end(), "op:v11::Copy") != p.provides.end();
    REQUIRE(found);
    // Only struct_size bytes were read: the poison after the 1.1 table is not value_inputs.
    const OpEntry* op = e->registry()->find_op("v11", "Copy", 1);
    REQUIRE(op);
    CHECK(op->def.value_inputs == 0);
    CHECK(e->registry()->find_op("", "Reshape", 13)->def.value_inputs == (uint64_t(1) << 1));
    ModelBuilder b("v11");
    b.add_input("x", DataType::kInt64, Shape{2});
    b.add_node("Copy", {"x"}, {"y"}, {}, "copy", "v11", 1);
    b.add_output("y");
    auto pm = e->prepare(b.build().value());
    REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
    auto s = Session::create(pm.value()).value();
    for (int64_t v : {3, 7}) {
      auto out = s->run({Tensor::from_vector<int64_t>({2}, {v, v + 1})});
      REQUIRE_MESSAGE(out.is_ok(), out.status().message());
      CHECK(out.value()[0].data<int64_t>()[1] == v + 1);
    }
  }

  TEST_CASE("a shared object without the entry point is refused") {
    auto e = bare_engine();
    Status s = e->load_plugin(tp("bad/no_entry_plugin.so"));
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.message().find("no_entry_plugin.so") != std::string::npos);
    CHECK(s.message().find("no entry point 'minnow_plugin_entry'") != std::string::npos);
  }

  TEST_CASE("a file that is not a shared object is refused") {
    auto e = bare_engine();
    Status s = e->load_plugin(tp("bad/not_a_plugin.so"));
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.message().find("not_a_plugin.so") != std::string::npos);
    CHECK(s.message().find("not a loadable shared object") != std::string::npos);
  }

  TEST_CASE("a second plugin with a loaded name is skipped") {
    auto e = bare_engine();
    REQUIRE(e->load_plugin(tp("test_plugin.so")).is_ok());
    Status s = e->load_plugin(tp("dup/test_plugin_duplicate.so"));
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.message().find("already loaded") != std::string::npos);
    CHECK(s.message().find("skipped") != std::string::npos);
    CHECK(e->plugins().size() == 1);
  }

  TEST_CASE("the same file loaded twice is loaded once, without a complaint") {
    auto e = bare_engine();
    REQUIRE(e->load_plugin(tp("test_plugin.so")).is_ok());
    CHECK(e->load_plugin(tp("test_plugin.so")).is_ok());
    CHECK(e->load_plugin(tp("./test_plugin.so")).is_ok());  // another spelling of the path
    CHECK(e->plugins().size() == 1);
  }

  TEST_CASE("scanning a folder turns refusals into warnings and loads the rest") {
    EngineOptions o;
    o.use_environment = false;
    o.use_default_folder = false;
    o.plugin_paths = {tp("bad")};
    auto e = Engine::create(o);
    REQUIRE(e.is_ok());
    CHECK(e.value()->plugins().empty());
    CHECK(e.value()->warnings().size() == 4);
  }

  TEST_CASE("MINNOW_PLUGIN_PATH is searched") {
    setenv("MINNOW_PLUGIN_PATH", (test::test_plugin_dir() + ":/nonexistent/folder").c_str(), 1);
    EngineOptions o;
    o.use_default_folder = false;
    auto e = Engine::create(o);
    unsetenv("MINNOW_PLUGIN_PATH");
    REQUIRE(e.is_ok());
    REQUIRE(e.value()->plugins().size() == 1);
    CHECK(e.value()->plugins()[0].name == "test_plugin");
  }

  TEST_CASE("an op plugin's op runs in a model, and its library outlives the engine") {
    std::shared_ptr<const PreparedModel> pm;
    {
      auto e = test::make_engine({tp("test_plugin.so")});
      ModelBuilder b("addconst");
      b.add_input("x", DataType::kFloat32, Shape{3});
      b.add_node("AddConst", {"x"}, {"y"}, {Attr::Float("value", 2.5f)}, "add", "test", 1);
      b.add_output("y");
      auto prepared = e->prepare(b.build().value());
      REQUIRE_MESSAGE(prepared.is_ok(), prepared.status().message());
      pm = prepared.value();
    }  // engine gone: kernels keep their plugin loaded
    auto s = Session::create(pm).value();
    auto out = s->run({Tensor::from_vector<float>({3}, {1, 2, 3})});
    REQUIRE(out.is_ok());
    CHECK(out.value()[0].data<float>()[2] == doctest::Approx(5.5));
  }

  TEST_CASE("a kernel is told which kernel of its backend writes its input (ABI 1.8)") {
    // p1 reads the AddConst a (same backend): told, outputs a's 7. p2 reads the graph
    // input, p3 a Relu that cpu_dense runs (another backend): told nothing, -1. With the
    // test backend forced for r, its own Relu writes r: p3 is told of that kernel, 1000.
    auto e = test::make_engine({tp("test_plugin.so")});
    ModelBuilder b("producer");
    b.add_input("x", DataType::kFloat32, Shape{3});
    b.add_node("AddConst", {"x"}, {"a"}, {Attr::Float("value", 7.0f)}, "a", "test", 1);
    b.add_node("Producer", {"a"}, {"p1"}, {}, "p1", "test", 1);
    b.add_node("Producer", {"x"}, {"p2"}, {}, "p2", "test", 1);
    b.add_node("AddConst", {"x"}, {"c"}, {Attr::Float("value", 3.0f)}, "c", "test", 1);
    b.add_node("Relu", {"c"}, {"r"}, {}, "r");
    b.add_node("Producer", {"r"}, {"p3"}, {}, "p3", "test", 1);
    for (const char* o : {"p1", "p2", "p3"}) b.add_output(o);
    auto pm = e->prepare(b.build().value());
    REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
    auto s = Session::create(pm.value()).value();
    auto out = s->run({Tensor::from_vector<float>({3}, {1, 2, 3})});
    REQUIRE_MESSAGE(out.is_ok(), out.status().message());
    CHECK(out.value()[0].data<float>()[0] == 7.0f);
    CHECK(out.value()[1].data<float>()[0] == -1.0f);
    CHECK(out.value()[2].data<float>()[0] == -1.0f);
    SessionOptions forced;
    forced.policy.node_force = {{"r", "test_backend"}};
    auto sf = Session::create(pm.value(), forced);
    REQUIRE_MESSAGE(sf.is_ok(), sf.status().message());
    auto fo = sf.value()->run({Tensor::from_vector<float>({3}, {1, 2, 3})});
    REQUIRE_MESSAGE(fo.is_ok(), fo.status().message());
    CHECK(fo.value()[0].data<float>()[0] == 7.0f);
    CHECK(fo.value()[2].data<float>()[0] == 1000.0f);  // the test backend's Relu wrote r
  }

  TEST_CASE("an op no plugin provides is refused at prepare with a hint") {
    auto e = test::make_engine();
    ModelBuilder b("unknown");
    b.add_input("x", DataType::kFloat32, Shape{3});
    b.add_node("Frobnicate", {"x"}, {"y"}, {}, "frob", "acme", 1);
    b.add_output("y");
    auto pm = e->prepare(b.build().value());
    REQUIRE_FALSE(pm.is_ok());
    CHECK(pm.status().message().find("acme::Frobnicate") != std::string::npos);
    CHECK(pm.status().message().find("MINNOW_PLUGIN_PATH") != std::string::npos);
  }

  TEST_CASE("a kernel that throws fails the run with plugin, node and op named") {
    auto e = test::make_engine({tp("test_plugin.so")});
    ModelBuilder b("fail");
    b.add_input("x", DataType::kFloat32, Shape{3});
    b.add_node("Fail", {"x"}, {"y"}, {}, "boom", "test", 1);
    b.add_output("y");
    auto pm = e->prepare(b.build().value()).value();
    auto s = Session::create(pm).value();
    auto out = s->run({Tensor::from_vector<float>({3}, {1, 2, 3})});
    REQUIRE_FALSE(out.is_ok());
    const std::string& m = out.status().message();
    CHECK(m.find("'boom'") != std::string::npos);
    CHECK(m.find("test::Fail") != std::string::npos);
    CHECK(m.find("test_plugin") != std::string::npos);
    CHECK(m.find("deliberate failure") != std::string::npos);
  }
}
