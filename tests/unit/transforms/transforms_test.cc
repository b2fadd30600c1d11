// Each transform plugin through Engine::transform, checked on models built in code:
// fuse is lossless, prune hits its sparsity by magnitude, quantize keeps masks and bounds
// the error, huffman is lossless and smaller, distill moves the student towards the
// teacher without touching masks or codebook assignments.
#include "transform_test_util.h"

#include <block_prune.h>
#include <thresholds.h>
#include <dataset.h>
#include <encode.h>
#include <evaluate.h>
#include <ir_util.h>
#include <transform_plugin.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <cstring>
#include <set>
#include <unistd.h>

using namespace minnow;
using namespace minnow::test;

namespace {

Tensor weight(const std::vector<uint8_t>& b, const std::string& name) {
  ir::ModelIR m = ir_of(b);
  return compress::constant_f32(m, m.graph.find_tensor(name));
}

double zero_fraction(const Tensor& w) {
  int64_t z = 0;
  for (int64_t i = 0; i < w.elements(); ++i) z += w.data<float>()[i] == 0.f;
  return double(z) / double(w.elements());
}

std::set<std::string> ops(const std::vector<uint8_t>& b) {
  std::set<std::string> s;
  for (const auto& n : ir_of(b).graph.nodes) s.insert(n.op);
  return s;
}

}  // namespace

TEST_CASE("fuse folds BatchNormalization (creating biases), Constant, Identity, Dropout losslessly") {
  ModelBuilder b("bn");
  b.add_input("x", DataType::kFloat32, Shape{2, 3, 9, 7});
  b.add_constant("w1", test::random_tensor({5, 3, 3, 3}, 1));
  auto bn = [&](const std::string& p, int64_t c, uint64_t seed) {
    b.add_constant(p + "s", test::random_tensor({c}, seed, 0.5f, 1.5f));
    b.add_constant(p + "b", test::random_tensor({c}, seed + 1));
    b.add_constant(p + "m", test::random_tensor({c}, seed + 2));
    b.add_constant(p + "v", test::random_tensor({c}, seed + 3, 0.1f, 2.f));
  };
  bn("bn1", 5, 10);
  bn("bn2", 4, 20);
  bn("bn3", 6, 30);
  b.add_constant("w2", test::random_tensor({4, 5, 1, 1}, 2));
  b.add_constant("b2", test::random_tensor({4}, 3));
  b.add_constant("wf", test::random_tensor({4, 6}, 4));
  b.add_node("Conv", {"x", "w1"}, {"c1"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 1, 1, 1})});
  b.add_node("BatchNormalization", {"c1", "bn1s", "bn1b", "bn1m", "bn1v"}, {"n1"}, {Attr::Float("epsilon", 1e-3f)});
  // ReLU6 bounds from Constant nodes, as torch exports them without constant folding.
  int lo_t = b.add_constant("lo_value", Tensor::from_vector<float>({}, {0.f}));
  int hi_t = b.add_constant("hi_value", Tensor::from_vector<float>({}, {6.f}));
  b.add_node("Constant", {}, {"lo"}, {Attr::TensorRef("value", lo_t)});
  b.add_node("Constant", {}, {"hi"}, {Attr::TensorRef("value", hi_t)});
  b.add_node("Clip", {"n1", "lo", "hi"}, {"r1"});
  b.add_node("Identity", {"r1"}, {"i1"});
  b.add_node("Conv", {"i1", "w2", "b2"}, {"c2"}, {Attr::Ints("kernel_shape", {1, 1}), Attr::Ints("strides", {2, 2})});
  b.add_node("BatchNormalization", {"c2", "bn2s", "bn2b", "bn2m", "bn2v"}, {"n2"});
  b.add_node("Dropout", {"n2"}, {"d2"});
  b.add_node("GlobalAveragePool", {"d2"}, {"g"});
  b.add_node("Flatten", {"g"}, {"f"});
  b.add_node("Gemm", {"f", "wf"}, {"fc"});
  b.add_node("BatchNormalization", {"fc", "bn3s", "bn3b", "bn3m", "bn3v"}, {"logits"});
  b.add_output("logits");
  auto in = bytes_of(b);
  std::string report;
  auto out = xform("fuse", in, {}, &report);
  MESSAGE(report);
  auto o = ops(out);
  CHECK(o.count("BatchNormalization") == 0);
  CHECK(o.count("Identity") == 0);
  CHECK(o.count("Dropout") == 0);
  CHECK(o.count("Constant") == 0);
  CHECK(report.find("BatchNormalization folded into Conv: 2") != std::string::npos);
  CHECK(report.find("BatchNormalization folded into Gemm: 1") != std::string::npos);
  Tensor x = test::random_tensor({2, 3, 9, 7}, 99);
  Tensor y0 = run(in, x), y1 = run(out, x);
  CHECK(test::max_abs_diff(y0, y1) < 1e-4f);
  ir::ModelIR m = ir_of(out);
  REQUIRE(m.compression_log.size() == 1);
  CHECK(m.compression_log[0].plugin == "fuse");
  CHECK(m.compression_log[0].size_before == in.size());
  CHECK(m.compression_log[0].size_after == out.size());
  CHECK(m.graph.tensors[size_t(m.graph.outputs[0])].name == "logits");
}

TEST_CASE("fuse folds a zero constant Pad into the next Conv") {
  auto make = [](bool with_pad) {
    ModelBuilder b("pad");
    b.add_input("x", DataType::kFloat32, Shape{1, 2, 6, 5});
    b.add_constant("w", test::random_tensor({3, 2, 3, 3}, 5));
    if (with_pad) {
      b.add_constant("pads", Tensor::from_vector<int64_t>({8}, {0, 0, 2, 1, 0, 0, 1, 0}));
      b.add_node("Pad", {"x", "pads"}, {"p"});
      b.add_node("Conv", {"p", "w"}, {"y"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {0, 1, 0, 1})});
    } else {
      b.add_node("Conv", {"x", "w"}, {"y"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {2, 2, 1, 1})});
    }
    b.add_output("y");
    return bytes_of(b);
  };
  auto fused = xform("fuse", make(true));
  CHECK(ops(fused).count("Pad") == 0);
  Tensor x = test::random_tensor({1, 2, 6, 5}, 3);
  CHECK(test::max_abs_diff(run(fused, x), run(make(false), x)) < 1e-5f);
}

TEST_CASE("fuse drops attributes at their ONNX defaults, keeps the others, and stays lossless") {
  auto make = [] {
    ModelBuilder b("defaults");
    b.add_input("x", DataType::kFloat32, Shape{1, 2, 8, 7});
    b.add_constant("w", test::random_tensor({4, 2, 3, 3}, 5));
    b.add_constant("wf", test::random_tensor({3, 4}, 6));
    b.add_node("Conv", {"x", "w"}, {"c"},
               {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("strides", {1, 1}), Attr::Ints("dilations", {1, 1}),
                Attr::Ints("pads", {0, 0, 0, 0}), Attr::Int("group", 1)});
    b.add_node("MaxPool", {"c"}, {"p"},
               {Attr::Ints("kernel_shape", {2, 2}), Attr::Ints("strides", {2, 2}), Attr::Ints("pads", {0, 0, 0, 0}),
                Attr::Int("ceil_mode", 1)});
    b.add_node("GlobalAveragePool", {"p"}, {"g"});
    b.add_node("Flatten", {"g"}, {"f"}, {Attr::Int("axis", 1)});
    b.add_node("Gemm", {"f", "wf"}, {"y"},
               {Attr::Float("alpha", 1.f), Attr::Float("beta", 1.f), Attr::Int("transB", 1)});
    b.add_output("y");
    return bytes_of(b);
  };
  auto in = make();
  std::string report;
  auto out = xform("fuse", in, {}, &report);
  CHECK(report.find("attributes at ONNX defaults dropped: 8") != std::string::npos);
  ir::ModelIR m = ir_of(out);
  auto names = [&](const char* op) {
    std::set<std::string> s;
    for (const auto& n : m.graph.nodes)
      if (n.op == op)
        for (const auto& a : n.attributes) s.insert(a.name);
    return s;
  };
  CHECK(names("Conv") == std::set<std::string>{"kernel_shape"});
  CHECK(names("MaxPool") == std::set<std::string>{"kernel_shape", "strides", "ceil_mode"});  // not defaults
  CHECK(names("Flatten").empty());
  CHECK(names("Gemm") == std::set<std::string>{"transB"});
  CHECK(out.size() < in.size());
  Tensor x = test::random_tensor({1, 2, 8, 7}, 7);
  CHECK(test::max_abs_diff(run(in, x), run(out, x)) == 0.f);
  // defaults=keep leaves them.
  auto kept = xform("fuse", in, {{"defaults", "keep"}});
  size_t attrs = 0;
  for (const auto& n : ir_of(kept).graph.nodes) attrs += n.attributes.size();
  CHECK(attrs == 13);
}

TEST_CASE("prune: global magnitude threshold, per-layer targets, CSR storage, exact survivors") {
  test::Mlp mlp(7, 40, 30, 20, 5);
  auto in = bytes_of(mlp.builder());
  auto out = xform("prune", in, {{"sparsity", "0.8"}});
  Tensor w1 = weight(out, "w1"), w2 = weight(out, "w2"), w3 = weight(out, "w3");
  int64_t total = w1.elements() + w2.elements() + w3.elements();
  int64_t zeros = int64_t(zero_fraction(w1) * w1.elements() + 0.5) + int64_t(zero_fraction(w2) * w2.elements() + 0.5) +
                  int64_t(zero_fraction(w3) * w3.elements() + 0.5);
  CHECK(std::abs(zeros - int64_t(0.8 * total + 0.5)) <= 1);
  // Survivors unchanged, and no pruned weight is larger than a survivor.
  float max_pruned = 0, min_kept = 1e9f;
  for (auto pr : {std::make_pair(&mlp.w1, &w1), std::make_pair(&mlp.w2, &w2), std::make_pair(&mlp.w3, &w3)})
    for (int64_t i = 0; i < pr.first->elements(); ++i) {
      float o = pr.first->data<float>()[i], n = pr.second->data<float>()[i];
      if (n == 0.f) max_pruned = std::max(max_pruned, std::fabs(o));
      else { CHECK(n == o); min_kept = std::min(min_kept, std::fabs(o)); }
    }
  CHECK(max_pruned <= min_kept);
  ir::ModelIR m = ir_of(out);
  CHECK(std::holds_alternative<ir::SparseStage>(m.graph.tensors[size_t(m.graph.find_tensor("w1"))].encodings[0]));
  CHECK(out.size() < in.size());
  // The pruned model computes what the naive evaluation with those weights computes.
  test::Mlp pruned = mlp;
  pruned.w1 = w1; pruned.w2 = w2; pruned.w3 = w3;
  Tensor x = test::random_tensor({1, 1, 40}, 4);
  Tensor y = run(out, x);
  auto ref = pruned.eval(x.data<float>());
  for (size_t k = 0; k < ref.size(); ++k) CHECK(y.data<float>()[k] == doctest::Approx(ref[k]).epsilon(1e-4));

  auto layer = xform("prune", in, {{"sparsity", "0.5"}, {"scope", "layer"}, {"sparsity@w3", "0"}});
  CHECK(zero_fraction(weight(layer, "w1")) == doctest::Approx(0.5).epsilon(0.01));
  CHECK(zero_fraction(weight(layer, "w2")) == doctest::Approx(0.5).epsilon(0.01));
  CHECK(zero_fraction(weight(layer, "w3")) == 0.0);
  // Pruning again only grows the mask (gradual pruning).
  auto again = xform("prune", out, {{"sparsity", "0.9"}});
  Tensor a1 = weight(again, "w1");
  for (int64_t i = 0; i < a1.elements(); ++i)
    if (w1.data<float>()[i] == 0.f) CHECK(a1.data<float>()[i] == 0.f);

  auto bad = engine()->transform("prune", in, {{"sparsity", "0.5"}, {"sparsty", "1"}});
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("sparsty") != std::string::npos);
  bad = engine()->transform("prune", in, {{"sparsity@nope", "0.5"}});
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("nope") != std::string::npos);
  bad = engine()->transform("prune", std::vector<uint8_t>{1, 2, 3}, {});
  CHECK_FALSE(bad.is_ok());
}

// Every (R x C) block of W[out, in] (logical orientation) is all zero or all kept.
bool whole_blocks(const Tensor& w, const compress::MatrixView& v, int R, int C) {
  for (int64_t br = 0; br < v.rows; br += R)
    for (int64_t bc = 0; bc < v.cols; bc += C) {
      int zeros = 0, n = 0;
      for (int64_t r = br; r < std::min(v.rows, br + R); ++r)
        for (int64_t c = bc; c < std::min(v.cols, bc + C); ++c, ++n) zeros += w.data<float>()[v.at(r, c)] == 0.f;
      if (zeros != 0 && zeros != n) return false;
    }
  return true;
}

TEST_CASE("prune block=RxC zeroes whole blocks of the kernels' W[out, in], by mean square; auto picks per layer") {
  test::Mlp mlp(11, 64, 48, 24, 8);  // fan-ins 64, 48, 24: multiples of 4 and 8
  auto in = bytes_of(mlp.builder());
  for (const char* shape : {"1x4", "4x1", "1x8"}) {
    CAPTURE(shape);
    auto out = xform("prune", in, {{"sparsity", "0.75"}, {"scope", "layer"}, {"block", shape}});
    const compress::BlockShape s = compress::parse_block_shape(shape, "test");
    for (const char* name : {"w1", "w2", "w3"}) {
      CAPTURE(name);
      Tensor w = weight(out, name);
      compress::MatrixView v{w.shape()[0], w.shape()[1], false};
      CHECK(whole_blocks(w, v, s.r, s.c));
      CHECK(zero_fraction(w) == doctest::Approx(0.75).epsilon(0.03));
    }
    // The blocks kept are the ones of largest mean square.
    Tensor w1 = weight(out, "w1");
    compress::MatrixView v{w1.shape()[0], w1.shape()[1], false};
    double max_cut = 0, min_kept = 1e9;
    for (int64_t br = 0; br < v.rows; br += s.r)
      for (int64_t bc = 0; bc < v.cols; bc += s.c) {
        double ms = 0;
        for (int64_t r = br; r < br + s.r; ++r)
          for (int64_t c = bc; c < bc + s.c; ++c) ms += std::pow(mlp.w1.data<float>()[v.at(r, c)], 2);
        if (w1.data<float>()[v.at(br, bc)] == 0.f) max_cut = std::max(max_cut, ms);
        else min_kept = std::min(min_kept, ms);
      }
    CHECK(max_cut <= min_kept);
  }
  // Global scope with blocks: one ranking over all layers, the total on target.
  auto global = xform("prune", in, {{"sparsity", "0.6"}, {"block", "1x4"}});
  int64_t zeros = 0, total = 0;
  for (const char* name : {"w1", "w2", "w3"}) {
    Tensor w = weight(global, name);
    zeros += int64_t(zero_fraction(w) * double(w.elements()) + 0.5);
    total += w.elements();
  }
  CHECK(double(zeros) / double(total) == doctest::Approx(0.6).epsilon(0.02));
  // A shape that does not tile a layer leaves that layer unstructured; per-tensor override.
  auto mixed = xform("prune", in, {{"sparsity", "0.5"}, {"scope", "layer"}, {"block", "1x8"}, {"block@w3", "4x1"}});
  CHECK(whole_blocks(weight(mixed, "w3"), {8, 24, false}, 4, 1));
  CHECK(whole_blocks(weight(mixed, "w1"), {48, 64, false}, 1, 8));
  // auto: every layer gets some shape the kernels run, and the mask is whole blocks of it.
  auto au = xform("prune", in, {{"sparsity", "0.9"}, {"scope", "layer"}, {"block", "auto"}, {"block_tolerance", "10"}});
  Tensor a1 = weight(au, "w1");
  CHECK(zero_fraction(a1) == doctest::Approx(0.9).epsilon(0.02));
  // With a tolerance of 10 any block shape qualifies, and the cost model (the table of
  // this CPU, thresholds.cc) decides: blocks where it predicts one over 10 % faster than CSR
  // at 90 % (the AVX2 table: 1x4 0.32 against 0.43), else the unstructured mask (the
  // AVX-512 table, where CSR is as fast: 0.31 against 0.29).
  Tensor u1 = weight(xform("prune", in, {{"sparsity", "0.9"}, {"scope", "layer"}}), "w1");
  CHECK_FALSE(whole_blocks(u1, {48, 64, false}, 1, 4));  // which unstructured pruning does not give
  CHECK_FALSE(whole_blocks(u1, {48, 64, false}, 4, 1));
  using cpu_sparse::Kind;
  const double csr_ratio = cpu_sparse::predicted_ratio(Kind::kFc, {1, 1}, 0.9);
  double block_ratio = 1e9;
  for (cpu_sparse::BlockShape s : {cpu_sparse::BlockShape{1, 4}, cpu_sparse::BlockShape{4, 1}, cpu_sparse::BlockShape{1, 8}})
    block_ratio = std::min(block_ratio, cpu_sparse::predicted_ratio(Kind::kFc, s, 0.9));
  if (1.1 * block_ratio < csr_ratio) {
    CHECK((whole_blocks(a1, {48, 64, false}, 1, 4) || whole_blocks(a1, {48, 64, false}, 4, 1) ||
           whole_blocks(a1, {48, 64, false}, 1, 8)));
  } else {
    CHECK(std::memcmp(a1.data<float>(), u1.data<float>(), size_t(a1.elements()) * sizeof(float)) == 0);
  }

  auto bad = engine()->transform("prune", in, {{"sparsity", "0.5"}, {"block", "3x3"}});
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("3x3") != std::string::npos);
  bad = engine()->transform("prune", in, {{"sparsity", "0.5"}, {"block@nope", "1x4"}});
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("nope") != std::string::npos);
}

TEST_CASE("block pruning follows the kernels' orientation of a transposed (MatMul) weight") {
  // B stored [K = 8, N = 6]: a 1x4 block of W[n, k] is 4 consecutive k of one n, i.e. 4
  // rows of one column of the storage.
  Tensor b = test::random_tensor({8, 6}, 21);
  compress::MatrixView v{6, 8, true};
  compress::BlockPruneItem it;
  it.data = b.data<float>();
  it.view = v;
  it.shape = {1, 4};
  std::vector<compress::BlockPruneItem> items{it};
  compress::prune_blocks_group(items, 0.5);
  CHECK(zero_fraction(b) == doctest::Approx(0.5));
  CHECK(whole_blocks(b, v, 1, 4));
  CHECK_FALSE(whole_blocks(b, {8, 6, false}, 1, 4));  // not blocks of the storage rows
  // removed_energy: 0 at sparsity 0, 1 at sparsity 1, unstructured removes the least.
  Tensor w = test::random_tensor({16, 32}, 22);
  compress::MatrixView wv{16, 32, false};
  CHECK(compress::removed_energy(w.data<float>(), wv, {1, 4}, 0.0) == 0.0);
  CHECK(compress::removed_energy(w.data<float>(), wv, {1, 4}, 1.0) == doctest::Approx(1.0));
  const double e11 = compress::removed_energy(w.data<float>(), wv, {1, 1}, 0.8);
  for (compress::BlockShape s : {compress::BlockShape{1, 4}, compress::BlockShape{4, 1}, compress::BlockShape{1, 8}})
    CHECK(compress::removed_energy(w.data<float>(), wv, s, 0.8) >= e11);
}

TEST_CASE("quantize codebook keeps the pruning mask, uses at most 2^bits values, then huffman is lossless") {
  test::Mlp mlp(11, 256, 96, 20, 5);
  auto pruned = xform("prune", bytes_of(mlp.builder()), {{"sparsity", "0.85"}});
  std::string rep;
  auto q = xform("quantize", pruned, {{"bits", "3"}}, &rep);
  for (const char* name : {"w1", "w2", "w3"}) {
    Tensor before = weight(pruned, name), after = weight(q, name);
    std::set<float> distinct;
    double err = 0, ref = 0;
    for (int64_t i = 0; i < after.elements(); ++i) {
      CHECK((before.data<float>()[i] == 0.f) == (after.data<float>()[i] == 0.f));
      distinct.insert(after.data<float>()[i]);
      err += std::pow(double(after.data<float>()[i]) - before.data<float>()[i], 2);
      ref += std::pow(double(before.data<float>()[i]), 2);
    }
    CHECK(distinct.size() <= 8 + 1);  // + the zero of a CSR-stored tensor
    CHECK(std::sqrt(err / ref) < 0.15);
  }
  CHECK(q.size() < pruned.size());
  auto h = xform("huffman", q, {}, &rep);
  CHECK(h.size() < q.size());
  ir::ModelIR hm = ir_of(h);
  bool any = false;
  for (const auto& t : hm.graph.tensors)
    for (const auto& st : t.encodings) any = any || std::holds_alternative<ir::HuffmanStage>(st);
  CHECK(any);
  Tensor x = test::random_tensor({1, 1, 256}, 2);
  CHECK(test::max_abs_diff(run(q, x), run(h, x)) == 0.f);
  ir::ModelIR m = ir_of(h);
  REQUIRE(m.compression_log.size() == 3);
  CHECK(m.compression_log[1].plugin == "quantize");
  CHECK(m.compression_log[1].parameters.find("\"bits\":3") != std::string::npos);
}

TEST_CASE("quantize small_cols: narrow weights (fan-in under N) get small_bits, whatever their size") {
  test::Mlp mlp(11, 256, 96, 20, 5);  // fan-in 256, 96, 20
  auto q = xform("quantize", bytes_of(mlp.builder()), {{"bits", "3"}, {"small_cols", "50"}});
  ir::ModelIR m = ir_of(q);
  auto int8_levels = [&](const char* name) {
    const auto& t = m.graph.tensors[size_t(m.graph.find_tensor(name))];
    const auto* d = std::get_if<ir::DenseStage>(&t.encodings.back());
    return d && d->element_type == DataType::kInt8 && !t.quant.empty();
  };
  CHECK_FALSE(int8_levels("w1"));
  CHECK_FALSE(int8_levels("w2"));
  CHECK(int8_levels("w3"));
  CHECK(m.compression_log.back().parameters.find("\"small_cols\":50") != std::string::npos);
  // Without it all three are 3-bit codebooks.
  ir::ModelIR plain = ir_of(xform("quantize", bytes_of(mlp.builder()), {{"bits", "3"}}));
  const auto& w3 = plain.graph.tensors[size_t(plain.graph.find_tensor("w3"))];
  CHECK(w3.quant.empty());
}

TEST_CASE("quantize uniform: per-channel symmetric, error within half a step") {
  test::Mlp mlp(13, 33, 17, 9, 4);
  auto in = bytes_of(mlp.builder());
  for (int bits : {8, 4, 2}) {
    auto q = xform("quantize", in, {{"bits", std::to_string(bits)}, {"kind", "uniform"}});
    ir::ModelIR m = ir_of(q);
    const auto& info = m.graph.tensors[size_t(m.graph.find_tensor("w1"))];
    REQUIRE(info.quant.scale.size() == 17);  // one per output row (transB = 1)
    if (bits == 8) CHECK(std::get<ir::DenseStage>(info.encodings.back()).element_type == DataType::kInt8);
    Tensor o = mlp.w1, d = weight(q, "w1");
    for (int64_t r = 0; r < 17; ++r)
      for (int64_t c = 0; c < 33; ++c)
        CHECK(std::fabs(d.data<float>()[r * 33 + c] - o.data<float>()[r * 33 + c]) <= info.quant.scale[size_t(r)] * 0.5f + 1e-6f);
    Tensor x = test::random_tensor({1, 1, 33}, 8);
    Tensor y = run(q, x);  // the backends run it (dequantized at load)
    CHECK(y.elements() == 4);
  }
}

TEST_CASE("huffman: pruned int8 levels stored sparse, the file in the compact layout, lossless") {
  test::Mlp mlp(17, 64, 40, 12, 5);
  auto pruned = xform("prune", bytes_of(mlp.builder()), {{"sparsity", "0.8"}, {"scope", "layer"}});
  auto q = xform("quantize", pruned, {{"bits", "8"}, {"kind", "uniform"}, {"layout", "dense"}});
  const ir::ModelIR qm = ir_of(q);
  CHECK(std::holds_alternative<ir::DenseStage>(qm.graph.tensors[size_t(qm.graph.find_tensor("w1"))].encodings.front()));
  CHECK_FALSE(qm.compact);
  std::string rep;
  auto h = xform("huffman", q, {}, &rep);
  CHECK(std::memcmp(h.data(), "MNWZ", 4) == 0);
  const ir::ModelIR hm = ir_of(h);
  CHECK(hm.compact);
  for (const char* name : {"w1", "w2"}) {
    const auto& info = hm.graph.tensors[size_t(hm.graph.find_tensor(name))];
    INFO(name << "\n" << rep);
    REQUIRE(info.encodings.size() == 2);
    CHECK(std::holds_alternative<ir::SparseStage>(info.encodings[0]));
    CHECK(std::get<ir::DenseStage>(info.encodings[1]).element_type == DataType::kInt8);
    CHECK(test::max_abs_diff(weight(q, name), weight(h, name)) == 0.f);
  }
  CHECK(rep.find("sparse int8 levels") != std::string::npos);
  CHECK(h.size() < q.size());
  Tensor x = test::random_tensor({1, 1, 64}, 3);
  CHECK(test::max_abs_diff(run(q, x), run(h, x)) == 0.f);
  // The record's size is the file's own, in the compact layout too; compact=0 keeps the
  // plain layout (same weights).
  CHECK(hm.compression_log.back().size_after == h.size());
  auto plain = xform("huffman", q, {{"compact", "0"}});
  CHECK(std::memcmp(plain.data(), "MNWZ", 4) != 0);
  CHECK(plain.size() > h.size());
  CHECK(ir_of(plain).compression_log.back().size_after == plain.size());
  CHECK(test::max_abs_diff(run(plain, x), run(h, x)) == 0.f);
}

TEST_CASE("the size a transform records is its file's own, whatever else the record holds") {
  // Each timestamp deflates differently; some put the recorded size in a cycle across the
  // data section's 8-byte boundary (a records b, b records a). Every one must come out
  // consistent, and nearly all in the compact layout.
  test::Mlp mlp(17, 64, 40, 12, 5);
  auto q = xform("quantize", xform("prune", bytes_of(mlp.builder()), {{"sparsity", "0.8"}}),
                 {{"bits", "8"}, {"kind", "uniform"}, {"layout", "dense"}});
  const ir::ModelIR base = ir_of(xform("huffman", q));
  REQUIRE(base.compact);
  int compact = 0;
  const int kStamps = 240;
  for (int i = 0; i < kStamps; ++i) {
    ir::ModelIR m = base;
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "2026-12-%02dT%02d:%02d:%02dZ", 1 + i % 28, i % 24, (i * 7) % 60, (i * 13) % 60);
    m.compression_log.back().timestamp = stamp;
    m.compression_log.back().size_after = 1;
    const std::vector<uint8_t> bytes = compress::serialize_recording_size(m);
    const ir::ModelIR back = ir_of(bytes);
    INFO("timestamp " << stamp);
    REQUIRE(back.compression_log.back().size_after == bytes.size());
    CHECK(back.compression_log.back().timestamp == stamp);
    compact += back.compact;
  }
  CHECK(compact == kStamps);
}

// `n` random 4x4 "images" as an idx3 file dir/img.idx (dir created).
static void write_random_images(const std::string& dir, int64_t n, unsigned seed) {
  const std::string mk = "mkdir -p " + dir;
  REQUIRE(std::system(mk.c_str()) == 0);
  std::vector<uint8_t> idx = {0, 0, 8, 3, 0, 0, uint8_t(n >> 8), uint8_t(n & 255), 0, 0, 0, 4, 0, 0, 0, 4};
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < n * 16; ++i) idx.push_back(uint8_t(rng() & 255));
  std::ofstream(dir + "/img.idx", std::ios::binary).write(reinterpret_cast<const char*>(idx.data()), std::streamsize(idx.size()));
}

TEST_CASE("distill trains a codebook with per-channel scales through its centroids") {
  const std::string dir = "/tmp/minnow_distill_scaled_" + std::to_string(::getpid());
  const int64_t N = 400;
  write_random_images(dir, N, 9);
  test::Mlp mlp(23, 16, 24, 16, 6);
  // Output rows of w1 a hundredfold apart in range (as BatchNormalization folding makes
  // them): quantize takes the per-channel-scaled codebook.
  for (int64_t r = 0; r < 24; ++r)
    for (int64_t c = 0; c < 16; ++c) mlp.w1.data<float>()[r * 16 + c] *= (r % 3 == 0 ? 40.f : r % 3 == 1 ? 4.f : 0.4f);
  for (Tensor* w : {&mlp.w2, &mlp.w3})
    for (int64_t i = 0; i < w->elements(); ++i) w->data<float>()[i] *= 8.f;
  auto teacher = bytes_of(mlp.builder(true));
  { std::ofstream(dir + "/teacher.minnow", std::ios::binary).write(reinterpret_cast<const char*>(teacher.data()), std::streamsize(teacher.size())); }
  auto student = xform("quantize", teacher, {{"bits", "2"}});
  ir::ModelIR a = ir_of(student);
  const auto& qa = a.graph.tensors[size_t(a.graph.find_tensor("w1"))];
  REQUIRE(qa.quant.scale.size() == 24);
  REQUIRE(std::holds_alternative<ir::CodebookStage>(qa.encodings.back()));
  std::string rep;
  auto tuned = xform("distill", student, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                          {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "6"}, {"batch", "32"},
                                          {"lr", "0.01"}, {"plugin_path", test::plugin_dir()}}, &rep);
  ir::ModelIR b = ir_of(tuned);
  const auto& qb = b.graph.tensors[size_t(b.graph.find_tensor("w1"))];
  CHECK(qb.quant.scale == qa.quant.scale);
  const auto& ca = std::get<ir::CodebookStage>(qa.encodings.back()).centroids;
  const auto& cb = std::get<ir::CodebookStage>(qb.encodings.back()).centroids;
  REQUIRE(ca.size() == cb.size());
  CHECK(ca != cb);
  // Same assignments: elements with one centroid before share one after (per channel).
  Tensor wa = compress::constant_f32(a, a.graph.find_tensor("w1")), wb = compress::constant_f32(b, b.graph.find_tensor("w1"));
  for (int64_t r = 0; r < 24; ++r) {
    std::map<float, float> f;
    for (int64_t c = 0; c < 16; ++c) {
      auto it = f.emplace(wa.data<float>()[r * 16 + c], wb.data<float>()[r * 16 + c]).first;
      CHECK(it->second == wb.data<float>()[r * 16 + c]);
    }
  }
  // Closer to the teacher on its images.
  auto images = compress::load_images(dir + "/img.idx", 0.5f, 0.25f);
  compress::Runner rt(Model::load_memory(teacher.data(), teacher.size()).value(), test::plugin_dir());
  compress::Runner r0(Model::load_memory(student.data(), student.size()).value(), test::plugin_dir());
  compress::Runner r1(Model::load_memory(tuned.data(), tuned.size()).value(), test::plugin_dir());
  int64_t k = 0;
  auto zt = rt.logits(images, 0, N, &k), z0 = r0.logits(images, 0, N, &k), z1 = r1.logits(images, 0, N, &k);
  double e0 = 0, e1 = 0;
  for (size_t i = 0; i < zt.size(); ++i) {
    e0 += std::pow(double(z0[i]) - zt[i], 2);
    e1 += std::pow(double(z1[i]) - zt[i], 2);
  }
  MESSAGE("squared logit error to the teacher: " << e0 << " -> " << e1 << "\n" << rep);
  CHECK(e1 < 0.9 * e0);  // measured: 65,478 -> 53,725
  std::string rm = "rm -rf " + dir;
  CHECK(std::system(rm.c_str()) == 0);
}

TEST_CASE("distill moves a pruned, quantized student towards its teacher; masks and assignments stay") {
  // 16-pixel "images" in an idx3 file, and the teacher written next to them.
  const std::string dir = "/tmp/minnow_distill_test_" + std::to_string(::getpid());
  const int64_t N = 600;
  write_random_images(dir, N, 5);
  test::Mlp mlp(21, 16, 24, 16, 6);
  // Weights large enough that the logits depend on the input (test::Mlp's are tiny).
  for (Tensor* w : {&mlp.w1, &mlp.w2, &mlp.w3})
    for (int64_t i = 0; i < w->elements(); ++i) w->data<float>()[i] *= 8.f;
  auto teacher = bytes_of(mlp.builder(true));
  { std::ofstream(dir + "/teacher.minnow", std::ios::binary).write(reinterpret_cast<const char*>(teacher.data()), std::streamsize(teacher.size())); }
  auto student = xform("quantize", xform("prune", teacher, {{"sparsity", "0.7"}}), {{"bits", "3"}});
  auto images = compress::load_images(dir + "/img.idx", 0.5f, 0.25f);
  // What distill minimises: KL(teacher || student) of the softmax at temperature 2.
  auto kl = [&](const std::vector<uint8_t>& s) {
    compress::Runner rt(Model::load_memory(teacher.data(), teacher.size()).value(), test::plugin_dir());
    compress::Runner rs(Model::load_memory(s.data(), s.size()).value(), test::plugin_dir());
    int64_t k = 0;
    auto a = rt.logits(images, 0, N, &k), b = rs.logits(images, 0, N, &k);
    double e = 0;
    for (int64_t i = 0; i < N; ++i) {
      double sa = 0, sb = 0;
      for (int64_t c = 0; c < k; ++c) { sa += std::exp(a[size_t(i * k + c)] / 2); sb += std::exp(b[size_t(i * k + c)] / 2); }
      for (int64_t c = 0; c < k; ++c) {
        double p = std::exp(a[size_t(i * k + c)] / 2) / sa, q = std::exp(b[size_t(i * k + c)] / 2) / sb;
        e += p * std::log(p / q);
      }
    }
    return e / double(N);
  };
  std::string rep;
  auto tuned = xform("distill", student, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                          {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "8"}, {"batch", "32"},
                                          {"lr", "0.01"}, {"temperature", "2"}, {"plugin_path", test::plugin_dir()}}, &rep);
  double before = kl(student), after = kl(tuned);
  MESSAGE("KL to teacher: " << before << " -> " << after << "\n" << rep);
  CHECK(after < 0.75 * before);  // measured: 0.41 -> 0.26
  ir::ModelIR a = ir_of(student), b = ir_of(tuned);
  for (const char* name : {"w1", "w2", "w3"}) {
    const auto& ta = a.graph.tensors[size_t(a.graph.find_tensor(name))];
    const auto& tb = b.graph.tensors[size_t(b.graph.find_tensor(name))];
    REQUIRE(ta.encodings.size() == tb.encodings.size());
    Tensor wa = compress::constant_f32(a, a.graph.find_tensor(name)), wb = compress::constant_f32(b, b.graph.find_tensor(name));
    for (int64_t i = 0; i < wa.elements(); ++i) CHECK((wa.data<float>()[i] == 0.f) == (wb.data<float>()[i] == 0.f));
    // Same assignments: elements equal before are equal after.
    std::map<float, float> f;
    for (int64_t i = 0; i < wa.elements(); ++i) {
      auto it = f.emplace(wa.data<float>()[i], wb.data<float>()[i]).first;
      CHECK(it->second == wb.data<float>()[i]);
    }
  }
  CHECK(b.compression_log.back().plugin == "distill");
  // Int8 levels (per-channel scales, as quantize's small tensors and biases) train too:
  // the values stay levels x the same scales, the pruned zeros stay zero, and the student
  // moves towards the teacher.
  auto q8 = xform("quantize", xform("prune", teacher, {{"sparsity", "0.7"}}),
                  {{"bits", "8"}, {"kind", "uniform"}, {"layout", "dense"}, {"bias_bits", "8"}});
  std::string rep8;
  auto t8 = xform("distill", q8, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                  {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "8"}, {"batch", "32"},
                                  {"lr", "0.01"}, {"temperature", "2"}, {"plugin_path", test::plugin_dir()}}, &rep8);
  const double kl_q8 = kl(q8), kl_t8 = kl(t8);
  MESSAGE("KL to teacher, int8 levels: " << kl_q8 << " -> " << kl_t8 << "\n" << rep8);
  CHECK(kl_t8 < 0.75 * kl_q8);
  CHECK(rep8.find("trained 6 of 6") != std::string::npos);
  ir::ModelIR mq = ir_of(q8), mt = ir_of(t8);
  for (const char* name : {"w1", "w2", "w3", "b1"}) {
    CAPTURE(name);
    const auto& iq = mq.graph.tensors[size_t(mq.graph.find_tensor(name))];
    const auto& it = mt.graph.tensors[size_t(mt.graph.find_tensor(name))];
    REQUIRE(std::get_if<ir::DenseStage>(&it.encodings.back()));
    CHECK(std::get<ir::DenseStage>(it.encodings.back()).element_type == DataType::kInt8);
    CHECK(iq.quant.scale == it.quant.scale);
    Tensor wq = compress::constant_f32(mq, mq.graph.find_tensor(name)), wt = compress::constant_f32(mt, mt.graph.find_tensor(name));
    int64_t changed = 0;
    for (int64_t i = 0; i < wq.elements(); ++i) {
      if (name[0] == 'w') CHECK((wq.data<float>()[i] == 0.f) <= (wt.data<float>()[i] == 0.f));
      changed += wq.data<float>()[i] != wt.data<float>()[i];
    }
    CHECK(changed > 0);
  }
  // Gradual pruning inside distillation: from the dense teacher to exactly 80 % zeros over
  // the weight matrices (biases untouched), masks only growing, still closer to the
  // teacher than one-shot pruning to the same sparsity.
  auto pruned_in = xform("distill", teacher, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                              {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "4"}, {"batch", "32"},
                                              {"lr", "0.01"}, {"lr_end", "0.001"}, {"temperature", "2"},
                                              {"sparsity", "0.8"}, {"prune_every", "5"},
                                              {"plugin_path", test::plugin_dir()}});
  auto one_shot = xform("prune", teacher, {{"sparsity", "0.8"}});
  ir::ModelIR c = ir_of(pruned_in);
  int64_t zeros = 0, total = 0;
  for (const char* name : {"w1", "w2", "w3"}) {
    Tensor w = compress::constant_f32(c, c.graph.find_tensor(name));
    total += w.elements();
    for (int64_t i = 0; i < w.elements(); ++i) zeros += w.data<float>()[i] == 0.f;
  }
  CHECK(zeros == int64_t(std::llround(0.8 * double(total))));
  for (const char* name : {"b1", "b2", "b3"}) {
    Tensor bias = compress::constant_f32(c, c.graph.find_tensor(name));
    int64_t bz = 0;
    for (int64_t i = 0; i < bias.elements(); ++i) bz += bias.data<float>()[i] == 0.f;
    CHECK(bz < bias.elements());
  }
  double kl_in = kl(pruned_in), kl_once = kl(one_shot);
  MESSAGE("KL to teacher at 80 %: one-shot " << kl_once << ", pruned while distilling " << kl_in);
  CHECK(kl_in < 0.9 * kl_once);  // measured: 0.37 one-shot, 0.29 while distilling
  // The same with block=4x1: whole blocks of four outputs x one input are zeroed, and
  // the mask holds through training (no pruned weight comes back).
  auto blocks = xform("distill", teacher, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                           {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "2"}, {"batch", "32"},
                                           {"lr", "0.01"}, {"sparsity", "0.75"}, {"prune_every", "5"},
                                           {"block", "4x1"}, {"plugin_path", test::plugin_dir()}});
  ir::ModelIR bl = ir_of(blocks);
  int64_t bzeros = 0, btotal = 0;
  for (const char* name : {"w1", "w2", "w3"}) {
    CAPTURE(name);
    Tensor w = compress::constant_f32(bl, bl.graph.find_tensor(name));
    CHECK(whole_blocks(w, {w.shape()[0], w.shape()[1], false}, 4, 1));
    btotal += w.elements();
    for (int64_t i = 0; i < w.elements(); ++i) bzeros += w.data<float>()[i] == 0.f;
  }
  CHECK(double(bzeros) / double(btotal) == doctest::Approx(0.75).epsilon(0.03));
  CHECK(bl.compression_log.back().parameters.find("\"block@w1\":\"4x1\"") != std::string::npos);
  // min_agreement: an agreement no student keeps (1.0) holds the sparsity where it stood
  // after the guard's first check, well below the target, and says so; the log records
  // the level reached.
  std::string held_report;
  auto held = xform("distill", teacher, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                         {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "4"}, {"batch", "32"},
                                         {"lr", "0.01"}, {"sparsity", "0.8"}, {"prune_every", "5"},
                                         {"min_agreement", "1.0"}, {"plugin_path", test::plugin_dir()}},
                    &held_report);
  CHECK(held_report.find("sparsity held at") != std::string::npos);
  CHECK(held_report.find("(held by min_agreement)") != std::string::npos);
  ir::ModelIR hm = ir_of(held);
  int64_t hz = 0, ht = 0;
  for (const char* name : {"w1", "w2", "w3"}) {
    Tensor w = compress::constant_f32(hm, hm.graph.find_tensor(name));
    ht += w.elements();
    for (int64_t i = 0; i < w.elements(); ++i) hz += w.data<float>()[i] == 0.f;
  }
  CHECK(hz > 0);
  CHECK(double(hz) / double(ht) < 0.75);  // the target is 0.8
  CHECK(hm.compression_log.back().parameters.find("\"min_agreement\":1") != std::string::npos);
  CHECK_FALSE(engine()->transform("distill", teacher, {{"images", dir + "/img.idx"}, {"min_agreement", "1.5"}}).is_ok());
  // allocate=sensitivity: per-layer sparsities from each layer's measured cost, the same
  // 80 % overall, recorded per layer in the log; closer to the teacher than one-shot.
  std::string sens_report;
  auto sens = xform("distill", teacher, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                         {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "4"}, {"batch", "32"},
                                         {"lr", "0.01"}, {"lr_end", "0.001"}, {"temperature", "2"},
                                         {"sparsity", "0.8"}, {"prune_every", "5"}, {"allocate", "sensitivity"},
                                         {"probe", "128"}, {"plugin_path", test::plugin_dir()}},
                    &sens_report);
  MESSAGE(sens_report);
  CHECK(sens_report.find("sparsity by sensitivity (128 probe images") != std::string::npos);
  // The fraction of zeros over the three weight matrices.
  auto zero_fraction = [](const ir::ModelIR& model) {
    int64_t z = 0, n = 0;
    for (const char* name : {"w1", "w2", "w3"}) {
      Tensor w = compress::constant_f32(model, model.graph.find_tensor(name));
      n += w.elements();
      for (int64_t i = 0; i < w.elements(); ++i) z += w.data<float>()[i] == 0.f;
    }
    return double(z) / double(n);
  };
  ir::ModelIR sm = ir_of(sens);
  CHECK(zero_fraction(sm) == doctest::Approx(0.8).epsilon(0.01));
  const std::string& sp = sm.compression_log.back().parameters;
  CHECK(sp.find("\"allocate\":\"sensitivity\"") != std::string::npos);
  CHECK(sp.find("\"sparsity@w1\":") != std::string::npos);
  CHECK(sp.find("\"sparsity@w3\":") != std::string::npos);
  CHECK(kl(sens) < kl_once);
  // max_cost=0: no layer may cost anything, so nothing is pruned whatever the target.
  std::string capped_report;
  auto capped = xform("distill", teacher, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                           {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "1"}, {"batch", "32"},
                                           {"sparsity", "0.8"}, {"prune_every", "5"}, {"allocate", "sensitivity"},
                                           {"probe", "64"}, {"max_cost", "0"}, {"plugin_path", test::plugin_dir()}},
                      &capped_report);
  CHECK(capped_report.find("allocation: 0.00% overall, predicted cost 0.000") != std::string::npos);
  ir::ModelIR cm = ir_of(capped);
  CHECK(zero_fraction(cm) == 0.0);
  CHECK(cm.compression_log.back().parameters.find("\"max_cost\":0") != std::string::npos);
  CHECK_FALSE(engine()->transform("distill", teacher, {{"images", dir + "/img.idx"}, {"allocate", "by-size"}}).is_ok());
  CHECK_FALSE(engine()->transform("distill", teacher, {{"images", dir + "/img.idx"}, {"probe", "0"}}).is_ok());
  // An augmented transfer set (blends of two images), labelled by the teacher batch by
  // batch: the student still moves towards the teacher on the original images (as far as
  // without blends), masks and assignments stay, and the log records the augmentation.
  std::string aug_report;
  auto aug = xform("distill", student, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                        {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "8"}, {"batch", "32"},
                                        {"lr", "0.01"}, {"temperature", "2"}, {"mix", "0.5"}, {"shift", "0"},
                                        {"plugin_path", test::plugin_dir()}}, &aug_report);
  const double kl_aug = kl(aug);
  MESSAGE("KL to teacher with mix=0.5: " << before << " -> " << kl_aug);
  CHECK(kl_aug < 0.75 * before);  // measured: 0.40 -> 0.26
  ir::ModelIR am = ir_of(aug);
  for (const char* name : {"w1", "w2", "w3"}) {
    Tensor wa = compress::constant_f32(a, a.graph.find_tensor(name)), wb = compress::constant_f32(am, am.graph.find_tensor(name));
    for (int64_t i = 0; i < wa.elements(); ++i) CHECK((wa.data<float>()[i] == 0.f) == (wb.data<float>()[i] == 0.f));
  }
  CHECK(am.compression_log.back().parameters.find("\"mix\":0.5,\"shift\":0") != std::string::npos);
  // Shifts (a 4x4 image moved by a pixel loses a quarter of itself: only run, not judged).
  auto shifted = xform("distill", student, {{"images", dir + "/img.idx"}, {"teacher", dir + "/teacher.minnow"},
                                            {"mean", "0.5"}, {"std", "0.25"}, {"epochs", "1"}, {"shift", "1"},
                                            {"plugin_path", test::plugin_dir()}});
  CHECK(ir_of(shifted).compression_log.back().parameters.find("\"shift\":1") != std::string::npos);
  CHECK_FALSE(engine()->transform("distill", teacher, {{"images", dir + "/img.idx"}, {"mix", "1.5"}}).is_ok());
  CHECK_FALSE(engine()->transform("distill", teacher, {{"images", dir + "/img.idx"}, {"shift", "-1"}}).is_ok());
  auto bad = engine()->transform("distill", student, {});
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("images") != std::string::npos);
  std::string rm = "rm -rf " + dir;
  CHECK(std::system(rm.c_str()) == 0);
}
