// The cpu_sparse plugin through the engine: which nodes it takes (and why), outputs
// against cpu_dense on the same model, odd conv geometries, the matmul service, and
// clear refusals.
#include <doctest/doctest.h>

#include "prune.h"
#include "sparse_matrix.h"
#include "test_util.h"
#include "thresholds.h"

#include <minnow/services.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace minnow;
using minnow::cpu_sparse::BlockShape;
using minnow::cpu_sparse::prune_blocks;

namespace {

Tensor pruned(Shape shape, uint64_t seed, double sparsity, BlockShape s = {1, 1}) {
  Tensor t = test::random_tensor(shape, seed);
  const int64_t rows = shape[0], cols = t.elements() / rows;
  prune_blocks(t.data<float>(), rows, cols, s, sparsity);
  return t;
}

// Runs `model` prepared under `policy` on one input; returns output 0 and the plan.
Tensor run(const std::shared_ptr<Engine>& engine, std::shared_ptr<const Model> model,
           const BackendPolicy& policy, const Tensor& x, std::vector<KernelChoice>* plan = nullptr,
           int threads = 1) {
  auto pm = engine->prepare(model, policy);
  REQUIRE_MESSAGE(pm.is_ok(), pm.status().message());
  if (plan) *plan = pm.value()->choices();
  SessionOptions o;
  o.threads = threads;
  auto s = Session::create(pm.value(), o);
  REQUIRE(s.is_ok());
  auto out = s.value()->run({x});
  REQUIRE_MESSAGE(out.is_ok(), out.status().message());
  return out.value()[0].clone();
}

const KernelChoice& choice_of(const std::vector<KernelChoice>& plan, const Model& m,
                              const std::string& op) {
  for (const auto& c : plan)
    if (m.graph().nodes[c.node].op == op) return c;
  throw std::runtime_error("no " + op + " in plan");
}

BackendPolicy dense_only() {
  BackendPolicy p;
  p.force = "cpu_dense";
  return p;
}

BackendPolicy sparse_only() {
  BackendPolicy p;
  p.force = "cpu_sparse";
  return p;
}

// MINNOW_CPU_SPARSE_BLOCK forces a block shape and skips the break-even check, so a kernel
// that never wins on this machine can still be run and compared.
struct ForcedBlock {
  explicit ForcedBlock(const char* shape) { setenv("MINNOW_CPU_SPARSE_BLOCK", shape, 1); }
  ~ForcedBlock() { unsetenv("MINNOW_CPU_SPARSE_BLOCK"); }
};

std::shared_ptr<const Model> conv_model(const Tensor& w, const Tensor& b, Shape in,
                                        std::vector<Attr> attrs) {
  ModelBuilder mb("conv");
  mb.add_input("x", DataType::kFloat32, in);
  mb.add_constant("w", w);
  mb.add_constant("b", b);
  mb.add_node("Conv", {"x", "w", "b"}, {"y"}, std::move(attrs));
  mb.add_output("y");
  auto m = mb.build();
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  return m.value();
}

}  // namespace

TEST_CASE("a 90 % pruned MLP runs on cpu_sparse and matches cpu_dense") {
  auto engine = test::make_engine();
  test::Mlp mlp(5, 784, 301, 97, 10);
  prune_blocks(mlp.w1.data<float>(), 301, 784, {1, 1}, 0.9);
  prune_blocks(mlp.w2.data<float>(), 97, 301, {1, 1}, 0.9);
  // w3 stays dense: it must stay on cpu_dense.
  auto model = mlp.builder(true).build().value();
  const Tensor x = test::random_tensor({3, 1, 784}, 9);
  std::vector<KernelChoice> plan;
  const Tensor ys = run(engine, model, {}, x, &plan, 2);
  const Tensor yd = run(engine, model, dense_only(), x);
  CHECK(test::max_abs_diff(ys, yd) < 1e-4f);
  int sparse = 0;
  for (const auto& c : plan) {
    const auto& node = model->graph().nodes[c.node];
    if (node.op != "Gemm") continue;
    const bool is_w3 = model->graph().tensors[node.inputs[1]].name == "w3";
    INFO(node.name << ": " << c.backend << " " << c.kernel << " — " << c.reason);
    CHECK(c.backend == (is_w3 ? "cpu_dense" : "cpu_sparse"));
    if (is_w3) CHECK(c.declined.find("not sparse enough") != std::string::npos);
    sparse += c.backend == "cpu_sparse";
  }
  CHECK(sparse == 2);
}

// choose_layout's zero count stops once the weights cannot reach any shape's break-even;
// its decision must be the exact one wherever the zeros lie: first (the count sees them
// before stopping), last (it must not stop before them), or spread evenly.
TEST_CASE("choose_layout decides as an exact count of zero blocks would, wherever the zeros are") {
  using namespace minnow::cpu_sparse;
  struct Dims { int64_t rows, cols; };
  for (Kind kind : {Kind::kFc, Kind::kConv1x1})
    for (Dims d : {Dims{37, 48}, Dims{64, 256}, Dims{255, 1025}})
      for (double frac : {0.0, 0.1, 0.28, 0.3, 0.32, 0.5, 0.56, 0.7, 0.74, 1.0})
        for (int where = 0; where < 3; ++where) {
          const int64_t n = d.rows * d.cols, nz = static_cast<int64_t>(frac * static_cast<double>(n));
          std::vector<float> w(static_cast<size_t>(n), 1.0f);
          for (int64_t z = 0; z < nz; ++z) {
            const int64_t i = where == 0 ? z : where == 1 ? n - 1 - z : z * n / std::max<int64_t>(nz, 1);
            w[static_cast<size_t>(i)] = 0.0f;
          }
          bool expect = false;
          for (BlockShape b : kBlockShapes)
            if (shape_fits(b, d.rows, d.cols) &&
                block_sparsity(w.data(), d.rows, d.cols, b, false) >= break_even_sparsity(kind, b))
              expect = true;
          const LayoutChoice lc = choose_layout(kind, w.data(), d.rows, d.cols, false);
          INFO(kind_name(kind) << " " << d.rows << "x" << d.cols << ", " << frac << " zero, placed "
                               << (where == 0 ? "first" : where == 1 ? "last" : "evenly") << ": " << lc.reason);
          CHECK(lc.ok == expect);
          if (lc.ok) CHECK(lc.sparsity >= break_even_sparsity(kind, lc.shape));
        }
}

TEST_CASE("MatMul with a constant [K,N] B, and Gemm with alpha, beta and a full C") {
  auto engine = test::make_engine();
  for (BlockShape s : {BlockShape{1, 1}, BlockShape{4, 1}, BlockShape{1, 4}}) {
    // 95 %: above every fc break-even measured against the SIMD dense GEMM (thresholds.cc).
    Tensor bt = pruned({37, 48}, 3, 0.95, s);  // W[N=37, K=48], stored transposed below
    Tensor b(DataType::kFloat32, Shape{48, 37});
    for (int n = 0; n < 37; ++n)
      for (int k = 0; k < 48; ++k) b.data<float>()[k * 37 + n] = bt.data<float>()[n * 48 + k];
    {
      ModelBuilder mb("matmul");
      mb.add_input("x", DataType::kFloat32, Shape{2, 5, 48});
      mb.add_constant("b", b);
      mb.add_node("MatMul", {"x", "b"}, {"y"});
      mb.add_output("y");
      auto m = mb.build().value();
      const Tensor x = test::random_tensor({2, 5, 48}, 4);
      std::vector<KernelChoice> plan;
      const Tensor ys = run(engine, m, {}, x, &plan);
      CHECK(choice_of(plan, *m, "MatMul").backend == "cpu_sparse");
      CHECK(test::max_abs_diff(ys, run(engine, m, dense_only(), x)) < 1e-4f);
    }
    {
      ModelBuilder mb("gemm");
      mb.add_input("x", DataType::kFloat32, Shape{6, 48});
      mb.add_constant("b", b);
      mb.add_constant("c", test::random_tensor({6, 37}, 8));
      mb.add_node("Gemm", {"x", "b", "c"}, {"y"},
                  {Attr::Float("alpha", 0.5f), Attr::Float("beta", -2.0f)});
      mb.add_output("y");
      auto m = mb.build().value();
      const Tensor x = test::random_tensor({6, 48}, 5);
      std::vector<KernelChoice> plan;
      const Tensor ys = run(engine, m, {}, x, &plan);
      CHECK(choice_of(plan, *m, "Gemm").backend == "cpu_sparse");
      CHECK(test::max_abs_diff(ys, run(engine, m, dense_only(), x)) < 1e-4f);
    }
  }
}

TEST_CASE("convolutions: 1x1 direct and general geometries via im2col match cpu_dense") {
  auto engine = test::make_engine();
  struct Case {
    int64_t cin, cout, k, h, w;
    std::vector<Attr> attrs;
    const char* kernel_prefix;
  };
  const std::vector<Case> cases = {
      {24, 37, 1, 9, 11, {}, "f32_sparse_conv1x1"},
      {32, 20, 1, 7, 7, {}, "f32_sparse_conv1x1"},
      {16, 24, 1, 9, 9, {Attr::Ints("strides", {2, 2})}, "f32_sparse_conv_"},
      {8, 19, 3, 13, 10, {Attr::Ints("pads", {1, 1, 1, 1})}, "f32_sparse_conv_"},
      {8, 16, 3, 15, 17, {Attr::Ints("strides", {2, 2}), Attr::Ints("pads", {1, 0, 1, 2})}, "f32_sparse_conv_"},
      {8, 12, 3, 12, 12, {Attr::Ints("dilations", {2, 2}), Attr::String("auto_pad", "SAME_UPPER")}, "f32_sparse_conv_"},
      {4, 9, 5, 30, 40, {Attr::String("auto_pad", "SAME_LOWER"), Attr::Ints("strides", {1, 3})}, "f32_sparse_conv_"},
  };
  int i = 0;
  for (const auto& c : cases) {
    ++i;
    const Tensor w = pruned({c.cout, c.cin, c.k, c.k}, 10 + i, 0.85);
    const Tensor b = test::random_tensor({c.cout}, 20 + i);
    auto m = conv_model(w, b, {2, c.cin, c.h, c.w}, c.attrs);
    const Tensor x = test::random_tensor({2, c.cin, c.h, c.w}, 30 + i);
    // 1x1 stride-1 convolutions win at 85 %; the im2col kernels never break even against
    // cpu_dense's packed GEMM (thresholds.cc), so the plan keeps those dense and the test
    // forces the sparse kernel to compare it.
    const bool direct = std::string(c.kernel_prefix) == "f32_sparse_conv1x1";
    std::vector<KernelChoice> plan;
    const Tensor yd = run(engine, m, dense_only(), x);
    if (!direct) {
      run(engine, m, {}, x, &plan);
      const KernelChoice& chosen = choice_of(plan, *m, "Conv");
      INFO("case " << i << " default plan: " << chosen.backend << " — " << chosen.declined);
      CHECK(chosen.backend == "cpu_dense");
      CHECK(chosen.declined.find("not sparse enough") != std::string::npos);
    }
    ForcedBlock forced(direct ? "" : "1x1");
    const Tensor ys = run(engine, m, direct ? BackendPolicy{} : sparse_only(), x, &plan, i % 2 ? 1 : 2);
    const KernelChoice& ch = choice_of(plan, *m, "Conv");
    INFO("case " << i << ": " << ch.backend << " " << ch.kernel << " " << ch.reason);
    CHECK(ch.backend == "cpu_sparse");
    CHECK(ch.kernel.rfind(c.kernel_prefix, 0) == 0);
    CHECK(test::max_abs_diff(ys, yd) < 1e-4f);
  }
}

TEST_CASE("a Relu or Clip after a sparse Conv or Gemm is clamped in the sparse kernel") {
  auto engine = test::make_engine();
  // 1x1 convolution (columns form, 81 pixels: strips and a partial vector) then Clip(-0.2,
  // 0.3); Gemm on the flattened result (rows form: tiled or panels) then Relu.
  ModelBuilder mb("clamped");
  mb.add_input("x", DataType::kFloat32, {1, 24, 9, 9});
  mb.add_constant("w", pruned({40, 24, 1, 1}, 61, 0.9));
  mb.add_constant("b", test::random_tensor({40}, 62));
  Tensor lo(DataType::kFloat32, Shape{}), hi(DataType::kFloat32, Shape{});
  lo.data<float>()[0] = -0.2f;
  hi.data<float>()[0] = 0.3f;
  mb.add_constant("lo", lo);
  mb.add_constant("hi", hi);
  mb.add_constant("w2", pruned({37, 40 * 81}, 63, 0.9));
  mb.add_constant("b2", test::random_tensor({37}, 64));
  mb.add_node("Conv", {"x", "w", "b"}, {"c"});
  mb.add_node("Clip", {"c", "lo", "hi"}, {"cc"});
  mb.add_node("Flatten", {"cc"}, {"f"});
  mb.add_node("Gemm", {"f", "w2", "b2"}, {"g"}, {Attr::Int("transB", 1)});
  mb.add_node("Relu", {"g"}, {"r"});
  mb.add_node("Flatten", {"r"}, {"y"});  // an activation that writes a graph output is not fused
  mb.add_output("y");
  auto m = mb.build();
  REQUIRE_MESSAGE(m.is_ok(), m.status().message());
  const Tensor x = test::random_tensor({1, 24, 9, 9}, 65);
  std::vector<KernelChoice> plan;
  const Tensor ys = run(engine, m.value(), {}, x, &plan);
  const Tensor yd = run(engine, m.value(), dense_only(), x);
  CHECK(test::max_abs_diff(ys, yd) < 1e-4f);
  CHECK(choice_of(plan, *m.value(), "Conv").backend == "cpu_sparse");
  CHECK(choice_of(plan, *m.value(), "Gemm").backend == "cpu_sparse");
  for (const char* act : {"Clip", "Relu"}) {
    const KernelChoice& c = choice_of(plan, *m.value(), act);
    INFO(std::string(act) << ": " << c.backend << " " << c.kernel << " " << c.reason);
    CHECK(c.reason.find("clamp applied by") != std::string::npos);
    CHECK(c.reason.find("f32_sparse") != std::string::npos);
  }
  int negative = 0;
  for (int64_t i = 0; i < ys.elements(); ++i) negative += ys.data<float>()[i] < 0.0f;
  CHECK(negative == 0);
}

TEST_CASE("declines what it cannot or should not run, saying why") {
  auto engine = test::make_engine();
  // Depthwise convolution: stays dense, and the plan says why.
  const Tensor w = pruned({8, 1, 3, 3}, 1, 0.9);
  auto m = conv_model(w, test::random_tensor({8}, 2), {1, 8, 6, 6}, {Attr::Int("group", 8)});
  auto pm = engine->prepare(m);
  REQUIRE(pm.is_ok());
  const KernelChoice& c = pm.value()->choices()[0];
  CHECK(c.backend == "cpu_dense");
  CHECK(c.declined.find("cpu_sparse") != std::string::npos);
  CHECK(c.declined.find("group") != std::string::npos);
  // Forcing cpu_sparse on a dense matrix is an error naming the node and the reason.
  ModelBuilder mb("gemm");
  mb.add_input("x", DataType::kFloat32, Shape{1, 16});
  mb.add_constant("b", test::random_tensor({16, 8}, 3));
  mb.add_node("Gemm", {"x", "b"}, {"y"});
  mb.add_output("y");
  BackendPolicy p;
  p.force = "cpu_sparse";
  auto r = engine->prepare(mb.build().value(), p);
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().message());
  CHECK(r.status().message().find("not sparse enough") != std::string::npos);
}

TEST_CASE("the matmul service declines dense weights and multiplies sparse ones") {
  void* lib = dlopen(CPU_SPARSE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(lib != nullptr, dlerror());
  auto entry = reinterpret_cast<mn_plugin_entry_fn>(dlsym(lib, MINNOW_PLUGIN_ENTRY_SYMBOL));
  REQUIRE(reinterpret_cast<void*>(entry) != nullptr);
  struct Captured {
    const mn_matmul_service* service = nullptr;
    int backends = 0;
  } cap;
  mn_registrar reg{};
  reg.struct_size = sizeof(reg);
  reg.host = &cap;
  reg.add_backend = [](void* h, const mn_backend*) {
    static_cast<Captured*>(h)->backends++;
    return MN_OK;
  };
  reg.add_service = [](void* h, const char* name, const void* s) {
    if (std::strcmp(name, MN_SERVICE_MATMUL_SPARSE) == 0)
      static_cast<Captured*>(h)->service = static_cast<const mn_matmul_service*>(s);
    return MN_OK;
  };
  mn_host_api host{};
  host.struct_size = sizeof(host);
  mn_error err{};
  REQUIRE(entry()->register_plugin(&host, &reg, &err) == MN_OK);
  CHECK(cap.backends == 1);
  const mn_matmul_service* sv = cap.service;
  REQUIRE(sv != nullptr);
  CHECK(sv->struct_size >= sizeof(mn_matmul_service));

  const int64_t N = 4 * 29, K = 40, M = 3;  // LSTM-like: 4 gates of 29
  Tensor dense = test::random_tensor({N, K}, 1);
  double cost = -1;
  CHECK(sv->prepare_weights(dense.data<float>(), N, K, &cost) == nullptr);

  Tensor w = pruned({N, K}, 2, 0.9, {1, 4});
  void* h = sv->prepare_weights(w.data<float>(), N, K, &cost);
  REQUIRE(h != nullptr);
  CHECK(cost > 0);
  CHECK(cost < 2.0 * N * K * 0.5);  // cheaper than cpu_dense's estimate
  CHECK(std::string(sv->kernel_name(h)).find("f32_sparse_fc") == 0);
  const Tensor x = test::random_tensor({M, K + 2}, 3);  // ldx = K + 2
  Tensor y = test::random_tensor({M, N + 1}, 4);        // ldy = N + 1
  Tensor want = y.clone();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.5 * want.data<float>()[m * (N + 1) + n];
      for (int64_t k = 0; k < K; ++k)
        acc += double(w.data<float>()[n * K + k]) * x.data<float>()[m * (K + 2) + k];
      want.data<float>()[m * (N + 1) + n] = float(acc);
    }
  REQUIRE(sv->multiply(h, nullptr, M, x.data<float>(), K + 2, 0.5f, y.data<float>(), N + 1) == MN_OK);
  CHECK(test::max_abs_diff(y, want) < 1e-4f);
  CHECK(sv->multiply(h, nullptr, M, x.data<float>(), K - 1, 0.5f, y.data<float>(), N + 1) ==
        MN_ERR_INVALID_ARGUMENT);
  sv->release(h);
  dlclose(lib);
}
