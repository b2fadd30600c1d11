// Run-time-sized outputs (plugin ABI 1.2): a shape function bounds an output, the planner
// reserves the bound, the kernel reports the actual dims, and consumers and graph outputs
// see those. Driven through test::TakeRows (tests/plugins/good_plugin.cc), whose kernel
// keeps the first `count` rows of its input.
#include <doctest/doctest.h>

#include <minnow/minnow.h>

#include "test_util.h"

using namespace minnow;

namespace {

std::shared_ptr<Engine> engine() { return test::make_engine({test::test_plugin_dir() + "/test_plugin.so"}); }

Tensor rows_tensor(int64_t n, int64_t w) {
  Tensor t(DataType::kFloat32, {n, w});
  for (int64_t i = 0; i < n * w; ++i) t.data<float>()[i] = float(i) - 4.5f;
  return t;
}

Tensor count(int64_t k) { return Tensor::from_vector<int64_t>({1}, {k}); }

std::unique_ptr<Session> session_of(ModelBuilder& b) {
  auto pm = engine()->prepare(b.build().value());
  REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
  auto s = Session::create(pm.value());
  REQUIRE_MESSAGE(s.is_ok(), s.status().message());
  return std::move(s.value());
}

}  // namespace

TEST_SUITE("runtime_shapes") {
  TEST_CASE("the graph output has the dims the kernel reported, run after run") {
    ModelBuilder b("take");
    b.add_input("x", DataType::kFloat32, Shape{5, 3});
    b.add_input("k", DataType::kInt64, Shape{1});
    b.add_node("TakeRows", {"x", "k"}, {"y"}, {}, "take", "test", 1);
    b.add_output("y");
    auto s = session_of(b);
    Tensor x = rows_tensor(5, 3);
    for (int64_t k : {2, 4, 0, 9, 1}) {
      CAPTURE(k);
      auto out = s->run({x, count(k)});
      REQUIRE_MESSAGE(out.is_ok(), out.status().message());
      const int64_t want = std::min<int64_t>(k, 5);
      REQUIRE(out.value()[0].shape() == Shape{want, 3});
      for (int64_t i = 0; i < want * 3; ++i) CHECK(out.value()[0].data<float>()[i] == x.data<float>()[i]);
      CHECK(s->output(0).value().shape() == Shape{want, 3});
      CHECK(s->tensor_shape("y").value() == Shape{want, 3});
    }
  }

  TEST_CASE("consumers see the reported dims: kernels, Shape and a shape read from a value") {
    ModelBuilder b("take_chain");
    b.add_input("x", DataType::kFloat32, Shape{6, 2});
    b.add_input("k", DataType::kInt64, Shape{1});
    b.add_node("TakeRows", {"x", "k"}, {"y"}, {}, "take", "test", 1);
    b.add_node("Relu", {"y"}, {"r"});
    b.add_node("Transpose", {"r"}, {"t"}, {Attr::Ints("perm", {1, 0})});
    b.add_node("Shape", {"t"}, {"shape"});
    b.add_node("ConstantOfShape", {"shape"}, {"ones"}, {Attr::TensorRef("value", b.add_constant("one", Tensor::from_vector<float>({1}, {1.f})))});
    b.add_output("t");
    b.add_output("shape");
    b.add_output("ones");
    auto s = session_of(b);
    Tensor x = rows_tensor(6, 2);
    for (int64_t k : {3, 6, 1}) {
      CAPTURE(k);
      auto out = s->run({x, count(k)});
      REQUIRE_MESSAGE(out.is_ok(), out.status().message());
      const Tensor& t = out.value()[0];
      REQUIRE(t.shape() == Shape{2, k});
      for (int64_t c = 0; c < 2; ++c)
        for (int64_t r = 0; r < k; ++r) CHECK(t.data<float>()[c * k + r] == std::max(0.f, x.data<float>()[r * 2 + c]));
      const Tensor& sh = out.value()[1];
      REQUIRE(sh.shape() == Shape{2});
      CHECK(sh.data<int64_t>()[0] == 2);
      CHECK(sh.data<int64_t>()[1] == k);
      const Tensor& ones = out.value()[2];
      REQUIRE(ones.shape() == Shape{2, k});
      for (int64_t i = 0; i < 2 * k; ++i) CHECK(ones.data<float>()[i] == 1.f);
    }
  }

  TEST_CASE("shape arithmetic on a run-time-sized tensor: planned from the bound, run on the real dims") {
    // y = TakeRows(x [6, 4]); z = Reshape(y, Concat(Slice(Shape(y), 0, 1), [2, 2])): the
    // plan folds the target from the bound ([6, 2, 2]), the run computes [k, 2, 2].
    ModelBuilder b("take_reshape");
    b.add_input("x", DataType::kFloat32, Shape{6, 4});
    b.add_input("k", DataType::kInt64, Shape{1});
    b.add_constant("zero", Tensor::from_vector<int64_t>({1}, {0}));
    b.add_constant("one", Tensor::from_vector<int64_t>({1}, {1}));
    b.add_constant("two_two", Tensor::from_vector<int64_t>({2}, {2, 2}));
    b.add_node("TakeRows", {"x", "k"}, {"y"}, {}, "take", "test", 1);
    b.add_node("Shape", {"y"}, {"shape"});
    b.add_node("Slice", {"shape", "zero", "one"}, {"rows"});
    b.add_node("Concat", {"rows", "two_two"}, {"target"}, {Attr::Int("axis", 0)});
    b.add_node("Reshape", {"y", "target"}, {"z"});
    b.add_output("z");
    auto s = session_of(b);
    Tensor x = rows_tensor(6, 4);
    for (int64_t k : {2, 5, 0, 6}) {
      CAPTURE(k);
      auto out = s->run({x, count(k)});
      REQUIRE_MESSAGE(out.is_ok(), out.status().message());
      REQUIRE(out.value()[0].shape() == Shape{k, 2, 2});
      for (int64_t i = 0; i < k * 4; ++i) CHECK(out.value()[0].data<float>()[i] == x.data<float>()[i]);
    }
  }

  TEST_CASE("with known inputs the node is evaluated while planning and its dims are exact") {
    ModelBuilder b("take_folded");
    b.add_input("z", DataType::kFloat32, Shape{1});
    b.add_constant("x", rows_tensor(4, 2));
    b.add_constant("k", count(3));
    b.add_node("TakeRows", {"x", "k"}, {"y"}, {}, "take", "test", 1);
    b.add_node("Shape", {"y"}, {"shape"});
    b.add_output("y");
    b.add_output("shape");
    auto s = session_of(b);
    auto out = s->run({Tensor::from_vector<float>({1}, {0.f})});
    REQUIRE_MESSAGE(out.is_ok(), out.status().message());
    CHECK(out.value()[0].shape() == Shape{3, 2});
    REQUIRE(out.value()[1].elements() == 2);
    CHECK(out.value()[1].data<int64_t>()[0] == 3);
  }

  TEST_CASE("dims above the bound are refused: the run fails naming the node") {
    ModelBuilder b("take_over");
    b.add_input("x", DataType::kFloat32, Shape{4, 2});
    b.add_input("k", DataType::kInt64, Shape{1});
    b.add_node("TakeRows", {"x", "k"}, {"y"}, {Attr::Int("over", 1)}, "take_too_many", "test", 1);
    b.add_output("y");
    auto s = session_of(b);
    auto out = s->run({rows_tensor(4, 2), count(2)});
    REQUIRE_FALSE(out.is_ok());
    CHECK(out.status().message().find("take_too_many") != std::string::npos);
    CHECK(out.status().message().find("above the bound") != std::string::npos);
  }

  TEST_CASE("a graph input an op reads as a value (mn_op_def.value_inputs) decides shapes, run after run") {
    // Reshape declares its input 1; the target reaches it through Concat (folded while
    // planning), so the walk from value inputs back to graph inputs must see through it.
    ModelBuilder b("reshape_by_input");
    b.add_input("x", DataType::kFloat32, Shape{2, 6});
    b.add_input("rows", DataType::kInt64, Shape{1});
    b.add_constant("minus_one", Tensor::from_vector<int64_t>({1}, {-1}));
    b.add_node("Concat", {"rows", "minus_one"}, {"target"}, {Attr::Int("axis", 0)});
    b.add_node("Reshape", {"x", "target"}, {"y"});
    b.add_output("y");
    auto s = session_of(b);
    Tensor x = rows_tensor(2, 6);
    for (int64_t r : {3, 4, 12, 3}) {
      CAPTURE(r);
      auto out = s->run({x, count(r)});
      REQUIRE_MESSAGE(out.is_ok(), out.status().message());
      CHECK(out.value()[0].shape() == Shape{r, 12 / r});
      CHECK(out.value()[0].data<float>()[11] == x.data<float>()[11]);
    }
  }
}
