// Declared sizes are checked before anything is allocated: int64 overflow in a shape's
// element count, tensors and arenas above SessionOptions::max_arena_bytes, and encoded
// constants whose decoded size is above max_decoded_constant_bytes().
#include <doctest/doctest.h>

#include <minnow/minnow.h>

#include "test_util.h"

using namespace minnow;

namespace {

const int64_t kBig = int64_t(1) << 31;

std::shared_ptr<Engine> dense_engine() { return test::make_engine(); }

// A constant [rows, cols] stored as CSR with no non-zeros: a few bytes of file that
// declare rows*cols floats.
void add_empty_sparse(ModelBuilder& b, const std::string& name, int64_t rows, int64_t cols) {
  std::vector<int32_t> row_ptr(size_t(rows) + 1, 0);
  ir::TensorInfo t;
  t.name = name;
  t.dtype = DataType::kFloat32;
  t.shape = {ir::Dim{rows, ""}, ir::Dim{cols, ""}};
  ir::SparseStage sp;
  sp.rows = rows;
  sp.cols = cols;
  sp.row_ptr = b.add_buffer(row_ptr.data(), row_ptr.size() * 4);
  sp.col_idx = b.add_buffer(nullptr, 0);
  sp.nnz = 0;
  t.encodings = {sp, ir::DenseStage{b.add_buffer(nullptr, 0), DataType::kFloat32}};
  b.ir().graph.tensors[b.tensor(name)] = t;  // registered by name, then filled in
}

}  // namespace

TEST_SUITE("resource_limits") {
  TEST_CASE("an input whose element count overflows int64 is refused") {
    ModelBuilder b("huge_input");
    b.add_input("x", DataType::kFloat32, Shape{kBig, kBig, kBig});
    b.add_node("Relu", {"x"}, {"y"});
    b.add_output("y");
    auto m = b.build();
    REQUIRE(m.is_ok());
    auto pm = dense_engine()->prepare(m.value());
    REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
    auto s = Session::create(pm.value());
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == StatusCode::kResourceExhausted);
    CHECK(s.status().message().find("input 'x'") != std::string::npos);
  }

  TEST_CASE("an arena above the configured limit is refused, below it runs") {
    ModelBuilder b("chain");
    b.add_input("x", DataType::kFloat32, Shape{256, 1024});  // 1 MiB per tensor
    b.add_node("Relu", {"x"}, {"a"});
    b.add_node("Sigmoid", {"a"}, {"b"});
    b.add_node("Add", {"a", "b"}, {"y"});
    b.add_output("y");
    auto pm = dense_engine()->prepare(b.build().value()).value();
    SessionOptions small;
    small.max_arena_bytes = 1536 * 1024;  // a and b are alive together: 2 MiB arena
    auto s = Session::create(pm, small);
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == StatusCode::kResourceExhausted);
    CHECK_MESSAGE(s.status().message().find("exceeds the limit of 1572864 bytes") != std::string::npos, s.status().message());
    SessionOptions enough;
    enough.max_arena_bytes = 4 << 20;
    CHECK(Session::create(pm, enough).is_ok());
  }

  TEST_CASE("an inferred intermediate shape above the limit is refused") {
    // Two 256 KiB inputs whose broadcast sum would be 16 GiB.
    ModelBuilder b("broadcast");
    b.add_input("x", DataType::kFloat32, Shape{65536, 1});
    b.add_input("y", DataType::kFloat32, Shape{1, 65536});
    b.add_node("Add", {"x", "y"}, {"s"}, {}, "outer_sum");
    b.add_node("Relu", {"s"}, {"z"});
    b.add_output("z");
    auto pm = dense_engine()->prepare(b.build().value());
    REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
    auto s = Session::create(pm.value());
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == StatusCode::kResourceExhausted);
    CHECK_MESSAGE(s.status().message().find("'outer_sum'") != std::string::npos, s.status().message());
    CHECK(s.status().message().find("[65536,65536]") != std::string::npos);
  }

  TEST_CASE("set_input refuses a tensor above the limit") {
    ModelBuilder b("dyn");
    b.add_input("x", DataType::kFloat32, std::vector<ir::Dim>{{-1, "N"}, {1024, ""}});
    b.add_node("Relu", {"x"}, {"y"});
    b.add_output("y");
    auto pm = dense_engine()->prepare(b.build().value()).value();
    SessionOptions o;
    o.max_arena_bytes = 64 * 1024;
    auto s = Session::create(pm, o).value();
    Status st = s->set_input(0, Tensor(DataType::kFloat32, Shape{32, 1024}));
    CHECK(st.code() == StatusCode::kResourceExhausted);
    CHECK(s->set_input(0, Tensor(DataType::kFloat32, Shape{4, 1024})).is_ok());
    CHECK(s->run().is_ok());
  }

  TEST_CASE("encoded constants declaring more than the decode limit are refused at load") {
    // 2^20 x 2^20 floats (4 TiB) in a few bytes of sparse encoding.
    ModelBuilder b("sparse_bomb");
    b.add_input("x", DataType::kFloat32, Shape{1});
    add_empty_sparse(b, "w", int64_t(1) << 20, int64_t(1) << 20);
    b.add_node("Add", {"x", "w"}, {"y"});
    b.add_output("y");
    auto bytes = b.serialize();
    REQUIRE(bytes.is_ok());
    CHECK(bytes.value().size() < (size_t(8) << 20));
    auto m = Model::load_memory(bytes.value().data(), bytes.value().size(), "bomb.minnow");
    REQUIRE_FALSE(m.is_ok());
    CHECK(m.status().code() == StatusCode::kResourceExhausted);
    CHECK_MESSAGE(m.status().message().find("bomb.minnow") != std::string::npos, m.status().message());
    CHECK(m.status().message().find("'w'") != std::string::npos);
  }

  TEST_CASE("the decode limit counts all encoded constants together and is configurable") {
    ModelBuilder b("two");
    b.add_input("x", DataType::kFloat32, Shape{1});
    add_empty_sparse(b, "w1", 256, 1024);  // 1 MiB each
    add_empty_sparse(b, "w2", 256, 1024);
    b.add_node("Add", {"w1", "w2"}, {"s"});
    b.add_node("Add", {"x", "s"}, {"y"});
    b.add_output("y");
    auto bytes = b.serialize().value();
    const uint64_t saved = max_decoded_constant_bytes();
    set_max_decoded_constant_bytes(1536 * 1024);
    auto refused = Model::load_memory(bytes.data(), bytes.size(), "two.minnow");
    set_max_decoded_constant_bytes(4 << 20);
    auto loaded = Model::load_memory(bytes.data(), bytes.size(), "two.minnow");
    set_max_decoded_constant_bytes(saved);
    REQUIRE_FALSE(refused.is_ok());
    CHECK_MESSAGE(refused.status().message().find("'w2'") != std::string::npos, refused.status().message());
    REQUIRE_MESSAGE(loaded.is_ok(), loaded.status().message());
    CHECK(loaded.value()->constant(loaded.value()->graph().find_tensor("w1"))->elements() == 256 * 1024);
  }
}
