// The .minnow format: round trip, and corrupt files of every kind give an error naming
// the problem, never a crash (this suite also runs under AddressSanitizer).
#include <doctest/doctest.h>

#include <minnow/minnow.h>

#include "test_util.h"

#include "minnow/minnow_generated.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

using namespace minnow;

namespace {

std::vector<uint8_t> small_model_bytes() {
  test::Mlp mlp(7, 16, 8, 6, 3);
  auto bytes = mlp.builder().serialize();
  REQUIRE(bytes.is_ok());
  return bytes.value();
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  auto m = Model::load_memory(bytes.data(), bytes.size(), "bad.minnow");
  return m.is_ok() ? std::string() : m.status().message();
}

}  // namespace

TEST_SUITE("model_format") {
  TEST_CASE("round trip keeps graph, attributes, metadata and constants") {
    test::Mlp mlp(1, 16, 8, 6, 3);
    ModelBuilder b = mlp.builder(true);
    b.set_metadata("author", "tests");
    b.ir().graph.nodes[1].attributes.push_back(Attr::Floats("alpha_list", {1.5f, 2.5f}));
    b.ir().graph.nodes[1].attributes.push_back(Attr::Strings("tags", {"a", "bc"}));
    ir::CompressionRecord rec;
    rec.plugin = "prune";
    rec.size_before = 100;
    rec.size_after = 10;
    rec.metric = "accuracy";
    rec.metric_before = 0.9f;
    rec.metric_after = 0.89f;
    b.ir().compression_log.push_back(rec);
    auto bytes = b.serialize();
    REQUIRE(bytes.is_ok());
    auto m = Model::load_memory(bytes.value().data(), bytes.value().size());
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    const auto& g = m.value()->graph();
    CHECK(g.nodes.size() == 6);
    CHECK(g.tensors[g.inputs[0]].shape[0].symbol == "N");
    CHECK(g.tensors[g.inputs[0]].shape[0].value == -1);
    const ir::Attribute* a = g.nodes[1].attr("alpha_list");
    REQUIRE(a);
    CHECK(a->floats == std::vector<float>{1.5f, 2.5f});
    CHECK(g.nodes[1].attr("tags")->strings == std::vector<std::string>{"a", "bc"});
    CHECK(g.nodes[1].attr("transB")->i == 1);
    CHECK(m.value()->ir().metadata.size() == 1);
    CHECK(m.value()->ir().compression_log.at(0).size_after == 10);
    CHECK(m.value()->ir().compression_log.at(0).metric_after == doctest::Approx(0.89));
    const Tensor* w = m.value()->constant(g.find_tensor("w2"));
    REQUIRE(w);
    CHECK(test::max_abs_diff(*w, mlp.w2) == 0.f);
    // 64-byte alignment of every buffer, in memory and in the file.
    for (const auto& blob : m.value()->ir().buffers) CHECK(reinterpret_cast<uintptr_t>(blob.data) % 64 == 0);
  }

  TEST_CASE("format 1.2: plain dims, shared and omitted strings, 8-byte offsets for encoded data") {
    test::Mlp mlp(1, 16, 8, 6, 3);
    ModelBuilder b = mlp.builder(true);
    for (auto& n : b.ir().graph.nodes) n.name.clear();  // nameless nodes
    // A codebook-coded copy of w2: its index buffer is decoded, so it need not be 64-aligned.
    auto& g0 = b.ir().graph;
    const int w2 = g0.find_tensor("w2");
    REQUIRE(w2 >= 0);
    const int64_t n = shape_elements(g0.tensors[w2].static_shape());
    std::vector<uint8_t> idx(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) idx[size_t(i)] = uint8_t(i % 3);
    b.ir().buffers.push_back(ir::Blob::copy_of(idx.data(), idx.size()));
    g0.tensors[w2].encodings = {ir::CodebookStage{{-1.f, 0.f, 1.f}, 8, uint32_t(b.ir().buffers.size() - 1), n}};
    auto bytes = b.serialize();
    REQUIRE_MESSAGE(bytes.is_ok(), bytes.status().message());
    // In the file: symbolic shapes keep Dim tables, the others are plain dims.
    const fb::Model* fm = fb::GetSizePrefixedModel(bytes.value().data());
    int plain = 0, tables = 0;
    for (const fb::Tensor* t : *fm->graph()->tensors()) {
      if (t->dims()) ++plain;
      if (t->shape()) ++tables;
      CHECK_FALSE((t->dims() && t->shape()));
    }
    CHECK(tables == 1);  // the input, [N, 16]
    CHECK(plain >= 4);
    for (const fb::Node* nd : *fm->graph()->nodes()) CHECK(nd->name() == nullptr);
    // Shared strings: the two "Gemm" ops point at one string.
    const fb::Node *ga = nullptr, *gb = nullptr;
    for (const fb::Node* nd : *fm->graph()->nodes())
      if (nd->op()->str() == "Gemm") (ga ? gb : ga) = nd;
    REQUIRE(gb);
    CHECK(ga->op() == gb->op());
    // Offsets: dense float weights at 64, the codebook indices at 8 at least.
    bool some_unaligned = false;
    for (const fb::Buffer* bf : *fm->buffers()) {
      CHECK(bf->offset() % 8 == 0);
      some_unaligned = some_unaligned || bf->offset() % 64 != 0;
    }
    CHECK(some_unaligned);
    // Read back: the same graph, every blob 64-aligned in memory (copied where the file's
    // offset was not), the codebook decoded.
    auto m = Model::load_memory(bytes.value().data(), bytes.value().size());
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    const auto& g = m.value()->graph();
    CHECK(g.tensors[g.inputs[0]].shape[0].symbol == "N");
    CHECK(g.tensors[g.find_tensor("w1")].static_shape() == mlp.w1.shape());
    for (const auto& nd : g.nodes) CHECK(nd.name.empty());
    for (const auto& blob : m.value()->ir().buffers) CHECK(reinterpret_cast<uintptr_t>(blob.data) % 64 == 0);
    const Tensor* w = m.value()->constant(g.find_tensor("w2"));
    REQUIRE(w);
    CHECK(w->data<float>()[1] == 0.f);
    CHECK(w->data<float>()[2] == 1.f);
    // A buffer offset that is not a multiple of 8 is refused.
    std::vector<uint8_t> bad = bytes.value();
    bool patched = false;
    for (size_t i = 0; i < fm->buffers()->size() && !patched; ++i) {
      const fb::Buffer* bf = fm->buffers()->Get(i);
      if (bf->offset() % 64 == 0) continue;
      const size_t at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(bf) - bytes.value().data());
      const uint64_t off = bf->offset() + 4;
      std::memcpy(bad.data() + at, &off, 8);  // Buffer{offset, size}: offset first
      patched = true;
    }
    REQUIRE(patched);
    CHECK(error_of(bad).find("not 8-byte aligned") != std::string::npos);
  }

  TEST_CASE("file round trip through mmap, written atomically") {
    auto bytes = small_model_bytes();
    std::string path = "format_test_model.minnow";
    REQUIRE(write_file_atomic(path, bytes.data(), bytes.size()).is_ok());
    auto m = Model::load_file(path);
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    CHECK(m.value()->file_size() == bytes.size());
    std::remove(path.c_str());
    auto missing = Model::load_file("does/not/exist.minnow");
    REQUIRE_FALSE(missing.is_ok());
    CHECK(missing.status().message().find("does/not/exist.minnow") != std::string::npos);
  }

  TEST_CASE("a 10 MB file loads with every weight as built; corruption refused") {
    // 1024 x 2560 floats in w1 alone: 10 MB, mapped and checksummed.
    test::Mlp mlp(11, 1024, 2560, 16, 4);
    auto bytes = mlp.builder().serialize();
    REQUIRE(bytes.is_ok());
    std::string path = "format_test_large.minnow";
    REQUIRE(write_file_atomic(path, bytes.value().data(), bytes.value().size()).is_ok());
    auto from_file = Model::load_file(path);
    REQUIRE_MESSAGE(from_file.is_ok(), from_file.status().message());
    CHECK(from_file.value()->file_size() == bytes.value().size());
    // Every weight as built, in 64-byte aligned memory (zero-copy from the mapping).
    const auto& g = from_file.value()->graph();
    for (const char* name : {"w1", "b1", "w2", "b2", "w3", "b3"}) {
      const Tensor* w = from_file.value()->constant(g.find_tensor(name));
      REQUIRE(w);
      const Tensor& want = name[0] == 'w' ? (name[1] == '1' ? mlp.w1 : name[1] == '2' ? mlp.w2 : mlp.w3)
                                          : (name[1] == '1' ? mlp.b1 : name[1] == '2' ? mlp.b2 : mlp.b3);
      CHECK(test::max_abs_diff(*w, want) == 0.f);
    }
    for (const auto& blob : from_file.value()->ir().buffers) CHECK(reinterpret_cast<uintptr_t>(blob.data) % 64 == 0);
    // A flipped byte near the end of the weights: the checksum names the problem.
    std::vector<uint8_t> bad = bytes.value();
    bad[bad.size() - 100] ^= 0x40;
    REQUIRE(write_file_atomic(path, bad.data(), bad.size()).is_ok());
    auto corrupt = Model::load_file(path);
    REQUIRE_FALSE(corrupt.is_ok());
    CHECK(corrupt.status().message().find("checksum") != std::string::npos);
    CHECK(corrupt.status().message().find(path) != std::string::npos);
    std::remove(path.c_str());
  }

  TEST_CASE("format 1.3 compact layout: deflated description, same model, corruption refused") {
    test::Mlp mlp(3, 16, 8, 6, 3);
    ModelBuilder b = mlp.builder(true);
    auto plain = b.serialize();
    REQUIRE(plain.is_ok());
    b.ir().compact = true;
    auto packed = b.serialize();
    REQUIRE_MESSAGE(packed.is_ok(), packed.status().message());
    const std::vector<uint8_t>& z = packed.value();
    CHECK(std::memcmp(z.data(), "MNWZ", 4) == 0);
    CHECK(z.size() < plain.value().size());
    // Read back: the same graph and weights as the plain file, and the layout is kept.
    auto m = Model::load_memory(z.data(), z.size(), "compact.minnow");
    REQUIRE_MESSAGE(m.is_ok(), m.status().message());
    CHECK(m.value()->ir().compact);
    const auto& g = m.value()->graph();
    CHECK(g.nodes.size() == 6);
    CHECK(g.tensors[g.inputs[0]].shape[0].symbol == "N");
    for (const char* name : {"w1", "w2", "w3"}) {
      const Tensor* w = m.value()->constant(g.find_tensor(name));
      REQUIRE(w);
      CHECK(test::max_abs_diff(*w, name[1] == '1' ? mlp.w1 : name[1] == '2' ? mlp.w2 : mlp.w3) == 0.f);
    }
    for (const auto& blob : m.value()->ir().buffers) CHECK(reinterpret_cast<uintptr_t>(blob.data) % 64 == 0);
    // Re-serialised as parsed: byte-identical (the layout survives transforms).
    auto again = serialize_model(m.value()->ir());
    REQUIRE(again.is_ok());
    CHECK(again.value() == z);
    // Every truncation, and flipped bytes anywhere, give an error naming the file or a
    // model that still verifies, never a crash (also under ASan).
    for (size_t len = 0; len < z.size(); ++len) {
      std::vector<uint8_t> cut(z.begin(), z.begin() + long(len));
      std::string e = error_of(cut);
      INFO("length " << len);
      CHECK(e.find("bad.minnow") != std::string::npos);
    }
    std::mt19937 rng(7);
    int errors = 0;
    for (int trial = 0; trial < 2000; ++trial) {
      auto copy = z;
      const size_t at = 12 + rng() % (copy.size() - 12);
      copy[trial % 3 == 0 ? at : 12 + at % 64] ^= static_cast<uint8_t>(1 + rng() % 255);
      auto r = Model::load_memory(copy.data(), copy.size(), "flipped.minnow");
      if (!r.is_ok()) {
        ++errors;
        CHECK(r.status().message().find("flipped.minnow") != std::string::npos);
      }
    }
    CHECK(errors > 1000);
    // Header sizes that lie.
    auto lie = [&](size_t at, uint32_t v) {
      auto copy = z;
      std::memcpy(copy.data() + at, &v, 4);
      return error_of(copy);
    };
    CHECK(lie(4, 0xffffffffu).find("corrupt compact model description") != std::string::npos);
    CHECK(lie(4, 0).find("corrupt compact model description") != std::string::npos);
    uint32_t described;
    std::memcpy(&described, z.data() + 4, 4);
    CHECK(lie(4, described + 1).find("inflates to") != std::string::npos);
    CHECK(lie(8, uint32_t(z.size())).find("truncated") != std::string::npos);
  }

  TEST_CASE("empty and tiny files") {
    CHECK(error_of({}).find("too small") != std::string::npos);
    CHECK(error_of(std::vector<uint8_t>(8, 0)).find("too small") != std::string::npos);
    std::vector<uint8_t> junk(100, 0xab);
    CHECK(error_of(junk).find("not a Minnow model") != std::string::npos);
  }

  TEST_CASE("every truncation is an error") {
    auto bytes = small_model_bytes();
    for (size_t len = 0; len < bytes.size(); len += (len < 512 ? 1 : 97)) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);
      std::string e = error_of(cut);
      INFO("length " << len);
      CHECK_FALSE(e.empty());
      CHECK(e.find("bad.minnow") != std::string::npos);
    }
  }

  TEST_CASE("flipped bytes never crash; the data section is checksummed") {
    auto bytes = small_model_bytes();
    std::mt19937 rng(123);
    int errors = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      auto copy = bytes;
      int flips = 1 + trial % 4;
      for (int k = 0; k < flips; ++k) copy[rng() % copy.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      auto m = Model::load_memory(copy.data(), copy.size(), "flipped.minnow");
      if (!m.is_ok()) {
        ++errors;
        CHECK(m.status().message().find("flipped.minnow") != std::string::npos);
      }
    }
    CHECK(errors > 0);
    // A flip inside the weights is always caught by the CRC.
    auto copy = bytes;
    copy[copy.size() - 5] ^= 0x40;
    CHECK(error_of(copy).find("checksum") != std::string::npos);
  }

  TEST_CASE("out-of-range tensor index: refused by the writer and by the loader") {
    test::Mlp mlp(2, 16, 8, 6, 3);
    ir::ModelIR m = mlp.builder().ir();
    m.graph.nodes[2].inputs[0] = 999;
    auto bytes = serialize_model(m);
    REQUIRE_FALSE(bytes.is_ok());
    CHECK(bytes.status().message().find("out of range") != std::string::npos);

    // A file written by someone else's tool, bypassing our writer: built with the raw
    // FlatBuffers API.
    for (int bad_index : {999, -5}) {
      flatbuffers::FlatBufferBuilder fbb;
      auto dims = fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Dim>>{fb::CreateDim(fbb, 4)});
      std::vector<flatbuffers::Offset<fb::Tensor>> tensors = {
          fb::CreateTensor(fbb, fbb.CreateString("x"), fb::DataType::FLOAT32, dims),
          fb::CreateTensor(fbb, fbb.CreateString("y"), fb::DataType::FLOAT32, dims)};
      std::vector<flatbuffers::Offset<fb::Node>> nodes = {fb::CreateNode(
          fbb, fbb.CreateString("relu"), fbb.CreateString(""), fbb.CreateString("Relu"), 13,
          fbb.CreateVector(std::vector<int32_t>{bad_index}), fbb.CreateVector(std::vector<int32_t>{1}))};
      auto graph = fb::CreateGraph(fbb, fbb.CreateString("g"), fbb.CreateVector(tensors), fbb.CreateVector(nodes),
                                   fbb.CreateVector(std::vector<int32_t>{0}), fbb.CreateVector(std::vector<int32_t>{1}));
      fb::FinishSizePrefixedModelBuffer(fbb, fb::CreateModel(fbb, 1, 0, 0, graph));
      std::vector<uint8_t> file(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
      std::string e = error_of(file);
      INFO(e);
      CHECK(e.find("input tensor index " + std::to_string(bad_index) + " out of range") != std::string::npos);
      CHECK(e.find("relu") != std::string::npos);
    }
  }

  TEST_CASE("buffer smaller than its shape") {
    test::Mlp mlp(4, 16, 8, 6, 3);
    ir::ModelIR m = mlp.builder().ir();
    int w = m.graph.find_tensor("w1");
    auto& st = std::get<ir::DenseStage>(m.graph.tensors[w].encodings[0]);
    auto& blob = m.buffers[st.buffer];
    blob = ir::Blob::copy_of(blob.data, blob.size - 4);
    auto bytes = serialize_model(m);
    REQUIRE(bytes.is_ok());
    std::string e = error_of(bytes.value());
    CHECK(e.find("w1") != std::string::npos);
    CHECK(e.find("bytes") != std::string::npos);
  }

  TEST_CASE("a cycle is refused") {
    ModelBuilder b("cyclic");
    b.add_input("x", DataType::kFloat32, Shape{2});
    b.add_node("Add", {"x", "b"}, {"a"});
    b.add_node("Relu", {"a"}, {"b"});
    b.add_output("b");
    auto m = b.build();
    REQUIRE_FALSE(m.is_ok());
    CHECK(m.status().message().find("cycle") != std::string::npos);
  }

  TEST_CASE("nodes run in file order where that order is topological, else as early as the file allows") {
    // A residual block as exporters write it: the main branch (n0 -> n1 -> n2), then the
    // shortcut branch (n3, reading the block input), then the Add. Breadth-first order would
    // run the shortcut second, its output then waiting in memory while the main branch runs.
    ModelBuilder b("block");
    b.add_input("x", DataType::kFloat32, Shape{4});
    b.add_node("Relu", {"x"}, {"a"});
    b.add_node("Relu", {"a"}, {"b"});
    b.add_node("Relu", {"b"}, {"c"});
    b.add_node("Neg", {"x"}, {"s"});
    b.add_node("Add", {"c", "s"}, {"y"});
    b.add_output("y");
    auto m = b.build();
    REQUIRE(m.is_ok());
    CHECK(m.value()->topo_order() == std::vector<int>{0, 1, 2, 3, 4});

    // Out of order in the file: each node still comes as soon as its inputs exist, ties
    // going to the earlier node in the file.
    ModelBuilder c("shuffled");
    c.add_input("x", DataType::kFloat32, Shape{4});
    c.add_node("Add", {"c", "s"}, {"y"});  // 0: after 1 and 2
    c.add_node("Relu", {"b"}, {"c"});      // 1: after 3
    c.add_node("Neg", {"x"}, {"s"});       // 2: ready at once
    c.add_node("Relu", {"a"}, {"b"});      // 3: after 4
    c.add_node("Relu", {"x"}, {"a"});      // 4: ready at once
    c.add_output("y");
    auto n = c.build();
    REQUIRE(n.is_ok());
    CHECK(n.value()->topo_order() == std::vector<int>{2, 4, 3, 1, 0});
  }

  TEST_CASE("a tensor produced twice and an unproduced read are refused") {
    ModelBuilder b("twice");
    b.add_input("x", DataType::kFloat32, Shape{2});
    b.add_node("Relu", {"x"}, {"y"});
    b.add_node("Relu", {"x"}, {"y"});
    b.add_output("y");
    auto m = b.build();
    REQUIRE_FALSE(m.is_ok());
    CHECK(m.status().message().find("already produced") != std::string::npos);

    ModelBuilder c("dangling");
    c.add_input("x", DataType::kFloat32, Shape{2});
    c.add_node("Add", {"x", "nowhere"}, {"y"});
    c.add_output("y");
    auto m2 = c.build();
    REQUIRE_FALSE(m2.is_ok());
    CHECK(m2.status().message().find("nowhere") != std::string::npos);
  }
}

TEST_SUITE("encodings") {
  // A 4x6 matrix stored four ways; each must decode to the same dense values.
  const std::vector<float> kDense = {0, 0, 1, 2, 0, 0,  //
                                     0, 0, 0, 0, 0, 0,  //
                                     3, 4, 0, 0, 0, 0,  //
                                     0, 0, 0, 0, 5, 6};

  ir::ModelIR model_with(ir::TensorInfo t, std::vector<std::vector<uint8_t>> buffers) {
    ir::ModelIR m;
    for (auto& b : buffers) m.buffers.push_back(ir::Blob::copy_of(b.data(), b.size()));
    m.graph.tensors.push_back(std::move(t));
    return m;
  }
  template <class T>
  std::vector<uint8_t> raw(const std::vector<T>& v) {
    std::vector<uint8_t> o(v.size() * sizeof(T));
    std::memcpy(o.data(), v.data(), o.size());
    return o;
  }
  ir::TensorInfo matrix_tensor() {
    ir::TensorInfo t;
    t.name = "w";
    t.shape = {{4, ""}, {6, ""}};
    return t;
  }

  TEST_CASE("CSR with dense values") {
    auto t = matrix_tensor();
    ir::SparseStage s;
    s.rows = 4; s.cols = 6; s.nnz = 6; s.row_ptr = 0; s.col_idx = 1;
    t.encodings = {s, ir::DenseStage{2, DataType::kFloat32}};
    auto m = model_with(t, {raw<int32_t>({0, 2, 2, 4, 6}), raw<int32_t>({2, 3, 0, 1, 4, 5}), raw<float>({1, 2, 3, 4, 5, 6})});
    auto d = decode_constant(m, m.graph.tensors[0]);
    REQUIRE_MESSAGE(d.is_ok(), d.status().message());
    CHECK(std::vector<float>(d.value().data<float>(), d.value().data<float>() + 24) == kDense);
  }

  TEST_CASE("BSR 1x2 blocks with codebook values") {
    auto t = matrix_tensor();
    ir::SparseStage s;
    s.format = ir::SparseFormat::kBSR;
    s.rows = 4; s.cols = 6; s.block_rows = 1; s.block_cols = 2; s.nnz = 6; s.row_ptr = 0; s.col_idx = 1;
    ir::CodebookStage c;
    c.centroids = {1, 2, 3, 4, 5, 6, 0, 0};
    c.bits = 3; c.count = 6; c.indices = 2;
    // indices 0..5, 3 bits each, little-endian bit order
    uint64_t packed = 0;
    for (int k = 0; k < 6; ++k) packed |= uint64_t(k) << (3 * k);
    std::vector<uint8_t> idx = {uint8_t(packed), uint8_t(packed >> 8), uint8_t(packed >> 16)};
    t.encodings = {s, c};
    auto m = model_with(t, {raw<int32_t>({0, 1, 1, 2, 3}), raw<int32_t>({1, 0, 2}), idx});
    auto d = decode_constant(m, m.graph.tensors[0]);
    REQUIRE_MESSAGE(d.is_ok(), d.status().message());
    CHECK(std::vector<float>(d.value().data<float>(), d.value().data<float>() + 24) == kDense);
  }

  TEST_CASE("codebook indices Huffman coded (canonical code, MSB first)") {
    // Symbols 0..2 over 24 elements: 0 -> '0', 1 -> '10', 2 -> '11' (lengths 1, 2, 2).
    auto t = matrix_tensor();
    ir::CodebookStage c;
    c.centroids = {0.f, 1.f, 2.f};
    c.bits = 2; c.count = 24;
    ir::HuffmanStage h;
    h.code_lengths = {1, 2, 2};
    h.count = 24;
    std::vector<int> syms(24, 0);
    syms[2] = 1; syms[3] = 2; syms[23] = 1;
    std::vector<uint8_t> bits;
    uint64_t nbits = 0;
    auto put = [&](int b) {
      if (nbits % 8 == 0) bits.push_back(0);
      if (b) bits.back() |= uint8_t(0x80 >> (nbits % 8));
      ++nbits;
    };
    for (int s : syms) {
      if (s == 0) put(0);
      else { put(1); put(s == 2); }
    }
    h.bit_length = nbits;
    h.bitstream = 0;
    t.encodings = {c, h};
    auto m = model_with(t, {bits});
    auto d = decode_constant(m, m.graph.tensors[0]);
    REQUIRE_MESSAGE(d.is_ok(), d.status().message());
    for (int k = 0; k < 24; ++k) CHECK(d.value().data<float>()[k] == float(syms[k]));
    // Truncated stream, over-subscribed code: errors.
    m.graph.tensors[0].encodings[1] = [&] { auto h2 = h; h2.bit_length = nbits - 1; return h2; }();
    CHECK_FALSE(decode_constant(m, m.graph.tensors[0]).is_ok());
    m.graph.tensors[0].encodings[1] = [&] { auto h2 = h; h2.code_lengths = {1, 1, 1}; return h2; }();
    CHECK(decode_constant(m, m.graph.tensors[0]).status().message().find("over-subscribed") != std::string::npos);
  }

  TEST_CASE("bad sparse structure is refused") {
    auto t = matrix_tensor();
    ir::SparseStage s;
    s.rows = 4; s.cols = 6; s.nnz = 6; s.row_ptr = 0; s.col_idx = 1;
    t.encodings = {s, ir::DenseStage{2, DataType::kFloat32}};
    auto m = model_with(t, {raw<int32_t>({0, 2, 2, 4, 6}), raw<int32_t>({2, 3, 0, 1, 4, 9}), raw<float>({1, 2, 3, 4, 5, 6})});
    CHECK(decode_constant(m, m.graph.tensors[0]).status().message().find("column index 9") != std::string::npos);
    auto m2 = model_with(t, {raw<int32_t>({0, 2, 1, 4, 6}), raw<int32_t>({2, 3, 0, 1, 4, 5}), raw<float>({1, 2, 3, 4, 5, 6})});
    CHECK(decode_constant(m2, m2.graph.tensors[0]).status().message().find("decreases") != std::string::npos);
  }

  // kDense's non-zeros sit at positions 2, 3, 12, 13, 22, 23: gaps 2, 0, 8, 0, 8, 0. At 3
  // bits the escape (7) splits each gap of 8 into 7 + 1.
  const std::vector<uint32_t> kGaps3 = {2, 0, 7, 1, 0, 7, 1, 0};
  std::vector<uint8_t> pack(const std::vector<uint32_t>& v, int bits) {
    std::vector<uint8_t> o((v.size() * bits + 7) / 8, 0);
    for (size_t k = 0; k < v.size(); ++k)
      for (int j = 0; j < bits; ++j)
        if ((v[k] >> j) & 1) o[(k * bits + j) / 8] |= uint8_t(1u << ((k * bits + j) % 8));
    return o;
  }
  ir::SparseStage relative_stage(int64_t count) {
    ir::SparseStage s;
    s.rows = 4; s.cols = 6; s.nnz = 6;
    s.index = ir::SparseIndex::kRelative;
    s.index_bits = 3;
    s.index_count = count;
    s.index_buffer = 0;
    return s;
  }

  TEST_CASE("relative sparse indices (packed, with escapes) decode and survive a file round trip") {
    auto t = matrix_tensor();
    t.encodings = {relative_stage(8), ir::DenseStage{1, DataType::kFloat32}};
    auto m = model_with(t, {pack(kGaps3, 3), raw<float>({1, 2, 3, 4, 5, 6})});
    auto d = decode_constant(m, m.graph.tensors[0]);
    REQUIRE_MESSAGE(d.is_ok(), d.status().message());
    CHECK(std::vector<float>(d.value().data<float>(), d.value().data<float>() + 24) == kDense);
    // Through the file format: the new fields are written and read back.
    m.graph.outputs = {0};
    auto bytes = serialize_model(m);
    REQUIRE_MESSAGE(bytes.is_ok(), bytes.status().message());
    auto back = parse_model(bytes.value().data(), bytes.value().size(), nullptr, "rel.minnow");
    REQUIRE_MESSAGE(back.is_ok(), back.status().message());
    CHECK(back.value().format_minor == kFormatMinor);
    auto d2 = decode_constant(back.value(), back.value().graph.tensors[0]);
    REQUIRE_MESSAGE(d2.is_ok(), d2.status().message());
    CHECK(std::vector<float>(d2.value().data<float>(), d2.value().data<float>() + 24) == kDense);
    // Every truncation of that file is an error, never a crash.
    for (size_t len = 0; len < bytes.value().size(); ++len) {
      auto r = parse_model(bytes.value().data(), len, nullptr, "rel.minnow");
      INFO("length " << len);
      CHECK_FALSE(r.is_ok());
    }
  }

  TEST_CASE("relative sparse indices, Huffman coded") {
    // Symbols 0, 1, 2, 7 -> lengths 1, 3, 3, 2 (codes 0, 110, 111, 10).
    auto t = matrix_tensor();
    auto s = relative_stage(8);
    s.index_code_lengths = {1, 3, 3, 0, 0, 0, 0, 2};
    std::vector<uint8_t> bits;
    uint64_t nbits = 0;
    auto put = [&](const char* code) {
      for (const char* c = code; *c; ++c, ++nbits) {
        if (nbits % 8 == 0) bits.push_back(0);
        if (*c == '1') bits.back() |= uint8_t(0x80 >> (nbits % 8));
      }
    };
    const char* codes[8] = {"0", "110", "111", "", "", "", "", "10"};
    for (uint32_t g : kGaps3) put(codes[g]);
    s.index_bit_length = nbits;
    t.encodings = {s, ir::DenseStage{1, DataType::kFloat32}};
    auto m = model_with(t, {bits, raw<float>({1, 2, 3, 4, 5, 6})});
    auto d = decode_constant(m, m.graph.tensors[0]);
    REQUIRE_MESSAGE(d.is_ok(), d.status().message());
    CHECK(std::vector<float>(d.value().data<float>(), d.value().data<float>() + 24) == kDense);
    // The stream cut short by a bit: an error.
    std::get<ir::SparseStage>(m.graph.tensors[0].encodings[0]).index_bit_length = nbits - 1;
    CHECK(decode_constant(m, m.graph.tensors[0]).status().message().find("ends early") != std::string::npos);
  }

  TEST_CASE("bad relative sparse indices are refused") {
    auto t = matrix_tensor();
    auto vals = raw<float>({1, 2, 3, 4, 5, 6});
    auto error = [&](ir::SparseStage s, const std::vector<uint32_t>& gaps, size_t buffer_bytes = SIZE_MAX) {
      auto tt = t;
      tt.encodings = {s, ir::DenseStage{1, DataType::kFloat32}};
      auto packed = pack(gaps, 3);
      if (buffer_bytes != SIZE_MAX) packed.resize(buffer_bytes);
      auto m = model_with(tt, {packed, vals});
      auto r = decode_constant(m, m.graph.tensors[0]);
      return r.is_ok() ? std::string() : r.status().message();
    };
    // Truncated buffer; more symbols than positions; a gap past the end; too few values.
    CHECK(error(relative_stage(8), kGaps3, 2).find("index buffer too small") != std::string::npos);
    CHECK(error(relative_stage(25), std::vector<uint32_t>(25, 0)).find("exceeds the 24 positions") != std::string::npos);
    CHECK(error(relative_stage(8), {2, 0, 7, 1, 0, 7, 7, 7}).find("past the end") != std::string::npos);
    CHECK(error(relative_stage(8), {0, 0, 0, 0, 7, 7, 7, 7}).find("past the end") != std::string::npos);
    CHECK(error(relative_stage(5), {2, 0, 7, 1, 0}).find("nnz disagree") != std::string::npos);
    auto s = relative_stage(8);
    s.index_bits = 0;
    CHECK(error(s, kGaps3).find("bits must be 1..16") != std::string::npos);
    // An index buffer that does not exist: refused by the writer's structural check.
    auto tt = t;
    auto bad = relative_stage(8);
    bad.index_buffer = 7;
    tt.encodings = {bad, ir::DenseStage{1, DataType::kFloat32}};
    auto m = model_with(tt, {pack(kGaps3, 3), vals});
    m.graph.outputs = {0};
    auto bytes = serialize_model(m);
    REQUIRE_FALSE(bytes.is_ok());
    CHECK(bytes.status().message().find("sparse index buffer 7 out of range") != std::string::npos);
  }
}
