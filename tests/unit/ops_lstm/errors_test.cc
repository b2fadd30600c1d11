// Bad RNN/LSTM/GRU nodes give one clear error naming the node, never a crash.
#include "test_util.h"

#include <doctest/doctest.h>

using namespace minnow;

namespace {

std::string prepare_error(ModelBuilder& b) {
  static auto engine = test::make_engine();
  auto model = b.build();
  if (!model) return model.status().message();
  auto pm = engine->prepare(model.value());
  if (!pm) return pm.status().message();
  auto s = Session::create(pm.value());
  if (!s) return s.status().message();
  return "";
}

ModelBuilder lstm(Shape w, Shape r, std::vector<Attr> attrs) {
  ModelBuilder b("bad_lstm");
  b.add_input("X", DataType::kFloat32, Shape{2, 1, 3});
  b.add_constant("W", test::random_tensor(w, 1));
  b.add_constant("R", test::random_tensor(r, 2));
  b.add_node("LSTM", {"X", "W", "R"}, {"Y"}, attrs, "the_lstm", "", 14);
  b.add_output("Y");
  return b;
}

}  // namespace

TEST_CASE("wrong W shape") {
  auto b = lstm({1, 8, 4}, {1, 8, 2}, {});
  std::string e = prepare_error(b);
  CHECK(e.find("the_lstm") != std::string::npos);
  CHECK(e.find("W has shape [1,8,4]") != std::string::npos);
}

TEST_CASE("unknown direction and activation, wrong activation count") {
  auto b1 = lstm({1, 8, 3}, {1, 8, 2}, {Attr::String("direction", "sideways")});
  CHECK(prepare_error(b1).find("direction 'sideways'") != std::string::npos);
  auto b2 = lstm({1, 8, 3}, {1, 8, 2}, {Attr::Strings("activations", {"Sigmoid", "Tanh", "Wiggle"})});
  CHECK(prepare_error(b2).find("unknown activation function 'Wiggle'") != std::string::npos);
  auto b3 = lstm({1, 8, 3}, {1, 8, 2}, {Attr::Strings("activations", {"Sigmoid", "Tanh"})});
  CHECK(prepare_error(b3).find("needs 3") != std::string::npos);
  auto b4 = lstm({2, 8, 3}, {2, 8, 2}, {Attr::String("direction", "bidirectional")});
  CHECK(prepare_error(b4).empty());
  auto b5 = lstm({1, 8, 3}, {1, 8, 2}, {Attr::String("direction", "bidirectional")});
  CHECK(prepare_error(b5).find("dim 0 should be 2") != std::string::npos);
}

TEST_CASE("sequence_lens out of range is a run-time error naming the node") {
  static auto engine = test::make_engine();
  ModelBuilder b("lens");
  b.add_input("X", DataType::kFloat32, Shape{2, 1, 3});
  b.add_input("L", DataType::kInt32, Shape{1});
  b.add_constant("W", test::random_tensor({1, 8, 3}, 1));
  b.add_constant("R", test::random_tensor({1, 8, 2}, 2));
  b.add_node("LSTM", {"X", "W", "R", "", "L"}, {"Y"}, {}, "lens_lstm", "", 14);
  b.add_output("Y");
  auto pm = engine->prepare(b.build().value());
  REQUIRE(pm);
  auto s = Session::create(pm.value());
  auto r = s.value()->run({test::random_tensor({2, 1, 3}, 3), Tensor::from_vector<int32_t>({1}, {5})});
  REQUIRE_FALSE(r);
  CHECK(r.status().message().find("lens_lstm") != std::string::npos);
  CHECK(r.status().message().find("sequence_lens[0] = 5") != std::string::npos);
}
