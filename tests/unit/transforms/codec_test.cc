// Encoders of compress_common against the core decoder (decode_constant): whatever we
// write must read back exactly. Also k-means and the quantized-tensor decoding rule.
#include "test_util.h"

#include <encode.h>
#include <huffman_code.h>
#include <ir_util.h>
#include <kmeans.h>

#include <doctest/doctest.h>

#include <random>

using namespace minnow;
using namespace minnow::compress;

namespace {

ir::ModelIR one_constant(const Tensor& w) {
  ModelBuilder b("c");
  b.add_input("x", DataType::kFloat32, Shape{1});
  b.add_constant("w", w);
  b.add_node("Identity", {"x"}, {"y"});
  b.add_output("y");
  return b.ir();
}

Tensor decoded(const ir::ModelIR& m) {
  auto bytes = serialize_model(m);
  REQUIRE_MESSAGE(bytes.is_ok(), bytes.status().message());
  auto back = parse_model(bytes.value().data(), bytes.value().size(), nullptr, "test");
  REQUIRE_MESSAGE(back.is_ok(), back.status().message());
  auto t = decode_constant(back.value(), back.value().graph.tensors[size_t(back.value().graph.find_tensor("w"))]);
  REQUIRE_MESSAGE(t.is_ok(), t.status().message());
  return t.value().clone();
}

Tensor sparse_random(Shape s, uint64_t seed, double density) {
  Tensor t = test::random_tensor(s, seed);
  std::mt19937_64 rng(seed + 7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < t.elements(); ++i) if (u(rng) > density) t.data<float>()[i] = 0.f;
  return t;
}

}  // namespace

TEST_CASE("bit packing round-trips for every width") {
  for (int bits = 1; bits <= 16; ++bits) {
    std::vector<uint32_t> v;
    for (uint32_t k = 0; k < 37; ++k) v.push_back((k * 2654435761u) & ((1u << bits) - 1));
    CHECK(unpack_bits(pack_bits(v, bits).data(), v.size(), bits) == v);
  }
}

TEST_CASE("CSR and dense storage decode to the same tensor (odd shapes)") {
  for (Shape s : {Shape{7, 13}, Shape{5, 3, 3, 3}, Shape{1, 1}, Shape{11, 1}}) {
    Tensor w = sparse_random(s, 3, 0.2);
    ir::ModelIR m = one_constant(w);
    int t = m.graph.find_tensor("w");
    Layout l = csr_layout(w);
    std::vector<float> vals;
    for (int64_t sl : l.slots) vals.push_back(w.data<float>()[sl]);
    store_values(m, t, l, vals);
    CHECK(std::holds_alternative<ir::SparseStage>(m.graph.tensors[size_t(t)].encodings[0]));
    CHECK(test::max_abs_diff(decoded(m), w) == 0.f);
    Layout back = layout_of(m, t);
    CHECK(back.slots == l.slots);
  }
}

TEST_CASE("store_smallest picks CSR only when it is smaller") {
  Tensor dense = test::random_tensor({20, 30}, 1);
  ir::ModelIR m = one_constant(dense);
  CHECK_FALSE(store_smallest(m, m.graph.find_tensor("w"), dense).sparse);
  Tensor sp = sparse_random({20, 30}, 2, 0.1);
  CHECK(store_smallest(m, m.graph.find_tensor("w"), sp).sparse);
  CHECK(test::max_abs_diff(decoded(m), sp) == 0.f);
}

TEST_CASE("store_smallest picks BSR when the non-zeros come in blocks") {
  // Non-zeros in whole 1x4 groups: BSR 1x4 needs a quarter of CSR's index symbols.
  Tensor w(DataType::kFloat32, {40, 64});
  std::mt19937_64 rng(11);
  for (int64_t r = 0; r < 40; ++r)
    for (int64_t c = 0; c < 64; c += 4)
      if (rng() % 10 == 0)
        for (int x = 0; x < 4; ++x) w.data<float>()[r * 64 + c + x] = float(rng() % 100 + 1) / 50.f;
  ir::ModelIR m = one_constant(w);
  int t = m.graph.find_tensor("w");
  Layout l = store_smallest(m, t, w);
  CHECK(layout_name(l) == "BSR 1x4");
  CHECK(test::max_abs_diff(decoded(m), w) == 0.f);
  Layout back = layout_of(m, t);
  CHECK(back.blocks == l.blocks);
  CHECK(back.slots == l.slots);
}

TEST_CASE("relative indices: every width, escapes, packed and Huffman coded, decode exactly") {
  // Density 0.02 over a wide matrix: gaps far above the small widths' escape value.
  for (Shape s : {Shape{13, 300}, Shape{1, 1000}, Shape{64, 9}}) {
    Tensor w = sparse_random(s, 17, 0.02);
    w.data<float>()[w.elements() - 1] = 3.f;  // a value in the very last position
    Layout l = csr_layout(w);
    for (int bits = 1; bits <= 12; ++bits) {
      std::vector<uint32_t> sym = relative_symbols(l.blocks, bits);
      for (uint32_t v : sym) CHECK(v < (1u << bits));
    }
    for (bool huffman : {false, true}) {
      ir::ModelIR m = one_constant(w);
      int t = m.graph.find_tensor("w");
      std::vector<float> vals;
      for (int64_t sl : l.slots) vals.push_back(w.data<float>()[sl]);
      std::vector<ir::EncodingStage> enc{sparse_stage(m, l, huffman)};
      enc.push_back(ir::DenseStage{add_buffer(m, vals.data(), vals.size() * 4), DataType::kFloat32});
      m.graph.tensors[size_t(t)].encodings = enc;
      const auto& st = std::get<ir::SparseStage>(m.graph.tensors[size_t(t)].encodings[0]);
      CHECK(st.index == ir::SparseIndex::kRelative);
      CHECK(test::max_abs_diff(decoded(m), w) == 0.f);
      CHECK(layout_of(m, t).slots == l.slots);
      // Huffman never loses against the best packed width (it is only chosen when smaller).
      CHECK(best_index_code(l.blocks, true).bytes <= best_index_code(l.blocks, false).bytes);
    }
  }
}

TEST_CASE("codebook, sparse codebook and Huffman-coded codebook decode exactly") {
  Tensor w = sparse_random({9, 14}, 5, 0.4);
  std::vector<float> cent = {-0.5f, 0.25f, 0.75f};
  for (bool sparse : {false, true}) {
    ir::ModelIR m = one_constant(w);
    int t = m.graph.find_tensor("w");
    Layout l = sparse ? csr_layout(w) : dense_layout(9, 14);
    std::vector<uint32_t> idx;
    Tensor expect(DataType::kFloat32, {9, 14});
    for (size_t k = 0; k < l.slots.size(); ++k) {
      idx.push_back(uint32_t(k * 7 % 3));
      expect.data<float>()[l.slots[k]] = cent[idx.back()];
    }
    store_codebook(m, t, l, cent, idx, 3);
    CHECK(test::max_abs_diff(decoded(m), expect) == 0.f);
    // Append a Huffman stage over the same indices.
    std::vector<uint64_t> freq(cent.size(), 0);
    for (auto i : idx) freq[i]++;
    auto lengths = huffman_code_lengths(freq);
    BitStream bs = huffman_encode(idx, lengths);
    ir::HuffmanStage h;
    h.code_lengths = lengths;
    h.count = int64_t(idx.size());
    h.bit_length = bs.bits;
    h.bitstream = add_buffer(m, bs.bytes.data(), bs.bytes.size());
    m.graph.tensors[size_t(t)].encodings.push_back(h);
    CHECK(bs.bits == huffman_bits(freq, lengths));
    CHECK(test::max_abs_diff(decoded(m), expect) == 0.f);
  }
}

TEST_CASE("Huffman code lengths: optimal on a known case, single symbol, length limit") {
  auto l = huffman_code_lengths({45, 13, 12, 16, 9, 5});
  CHECK(huffman_bits({45, 13, 12, 16, 9, 5}, l) == 224);  // textbook example (CLRS)
  auto one = huffman_code_lengths({0, 10, 0});
  CHECK(one == std::vector<uint8_t>{0, 1, 0});
  std::vector<uint64_t> fib = {1, 1};
  while (fib.size() < 40) fib.push_back(fib[fib.size() - 1] + fib[fib.size() - 2]);
  auto lim = huffman_code_lengths(fib, 12);
  uint64_t kraft = 0;
  for (auto x : lim) { CHECK(x <= 12); CHECK(x >= 1); kraft += uint64_t(1) << (32 - x); }
  CHECK(kraft <= (uint64_t(1) << 32));
}

TEST_CASE("k-means: exact on few distinct values, lower error with more clusters") {
  std::vector<float> v = {1, 1, 1, 5, 5, 9, 9, 9, 9};
  auto r = kmeans_1d(v, 4);
  CHECK(r.centroids == std::vector<float>{1, 5, 9});
  CHECK(r.sse == 0);
  Tensor w = test::random_tensor({1000}, 9);
  std::vector<float> x(w.data<float>(), w.data<float>() + 1000);
  double prev = 1e30;
  for (int k : {2, 4, 8, 16}) {
    auto q = kmeans_1d(x, k);
    CHECK(q.centroids.size() <= size_t(k));
    CHECK(q.sse < prev);
    prev = q.sse;
  }
}

TEST_CASE("quantized tensors: int8 and codebook levels are dequantized per channel") {
  ir::ModelIR m = one_constant(Tensor(DataType::kFloat32, {2, 3}));
  int t = m.graph.find_tensor("w");
  std::vector<int8_t> q = {-3, 0, 3, 100, -127, 1};
  auto& info = m.graph.tensors[size_t(t)];
  info.encodings = {ir::DenseStage{add_buffer(m, q.data(), q.size()), DataType::kInt8}};
  info.quant.scale = {0.5f, 0.01f};
  info.quant.zero_point = {0, 0};
  info.quant.axis = 0;
  Tensor d = decoded(m);
  std::vector<float> expect = {-1.5f, 0.f, 1.5f, 1.f, -1.27f, 0.01f};
  for (int k = 0; k < 6; ++k) CHECK(d.data<float>()[k] == doctest::Approx(expect[size_t(k)]));
  // Per-channel along axis 1 with codebook levels.
  store_codebook(m, t, dense_layout(2, 3), {-1.f, 0.f, 1.f}, {0, 1, 2, 2, 1, 0}, 2);
  m.graph.tensors[size_t(t)].quant.scale = {1.f, 2.f, 3.f};
  m.graph.tensors[size_t(t)].quant.zero_point = {0, 0, 0};
  m.graph.tensors[size_t(t)].quant.axis = 1;
  d = decoded(m);
  std::vector<float> e2 = {-1, 0, 3, 1, 0, -3};
  for (int k = 0; k < 6; ++k) CHECK(d.data<float>()[k] == e2[size_t(k)]);
  // A scale count that matches no axis is an error naming the tensor.
  m.graph.tensors[size_t(t)].quant.scale = {1.f, 2.f};
  auto bytes = serialize_model(m);
  auto back = parse_model(bytes.value().data(), bytes.value().size(), nullptr, "test");
  REQUIRE(back.is_ok());
  auto bad = decode_constant(back.value(), back.value().graph.tensors[size_t(t)]);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("'w'") != std::string::npos);
}
