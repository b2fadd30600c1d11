// The training graph's gradients against finite differences, and its forward pass against
// the engine's kernels, on a small model covering the differentiated ops.
#include "test_util.h"

#include <train_graph.h>
#include <train_math.h>

#include <doctest/doctest.h>
#include <tbb/task_arena.h>

using namespace minnow;
using namespace minnow::compress;

namespace {

ModelBuilder net() {
  ModelBuilder b("net");
  b.add_input("x", DataType::kFloat32, std::vector<ir::Dim>{{-1, "N"}, {2, ""}, {9, ""}, {8, ""}});
  b.add_constant("w1", test::random_tensor({4, 2, 3, 3}, 1, -0.5f, 0.5f));
  b.add_constant("b1", test::random_tensor({4}, 2));
  b.add_constant("s", test::random_tensor({4}, 3, 0.5f, 1.5f));
  b.add_constant("bb", test::random_tensor({4}, 4));
  b.add_constant("m", test::random_tensor({4}, 5));
  b.add_constant("v", test::random_tensor({4}, 6, 0.5f, 1.5f));
  b.add_constant("lo", Tensor::from_vector<float>({}, {-0.5f}));
  b.add_constant("hi", Tensor::from_vector<float>({}, {1.5f}));
  b.add_constant("w2", test::random_tensor({4, 2, 3, 3}, 7, -0.5f, 0.5f));  // group 2
  b.add_constant("c", test::random_tensor({1, 4, 1, 1}, 8));
  b.add_constant("wf", test::random_tensor({5, 4 + 4}, 9, -0.5f, 0.5f));
  b.add_constant("bf", test::random_tensor({5}, 10));
  b.add_node("Conv", {"x", "w1", "b1"}, {"c1"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 0, 1, 2})});
  b.add_node("BatchNormalization", {"c1", "s", "bb", "m", "v"}, {"n1"});
  b.add_node("Clip", {"n1", "lo", "hi"}, {"r1"});
  b.add_node("MaxPool", {"r1"}, {"p1"}, {Attr::Ints("kernel_shape", {2, 2}), Attr::Ints("strides", {2, 2})});
  b.add_node("Conv", {"p1", "w2"}, {"c2"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("strides", {2, 2}),
                                            Attr::Int("group", 2), Attr::Ints("pads", {1, 1, 1, 1})});
  b.add_node("Add", {"c2", "c"}, {"a2"});
  b.add_node("LeakyRelu", {"a2"}, {"r2"}, {Attr::Float("alpha", 0.1f)});
  b.add_node("AveragePool", {"r2"}, {"ap"}, {Attr::Ints("kernel_shape", {2, 2}), Attr::Ints("strides", {1, 1})});
  b.add_node("GlobalAveragePool", {"r2"}, {"gp"});
  b.add_node("Flatten", {"ap"}, {"f1"});
  b.add_node("Flatten", {"gp"}, {"f2"});
  b.add_node("Concat", {"f1", "f2"}, {"cat"}, {Attr::Int("axis", 1)});
  b.add_node("Gemm", {"cat", "wf", "bf"}, {"fc"}, {Attr::Int("transB", 1)});
  b.add_node("Softmax", {"fc"}, {"y"}, {Attr::Int("axis", -1)});
  b.add_output("y");
  return b;
}

// Forward against the engine, then every parameter's gradient against central
// differences of loss = sum(r * y); `params` trainable tensors expected.
void check_net(ModelBuilder b, const Shape& xshape, size_t params) {
  ir::ModelIR m = b.ir();
  TrainGraph tg(m);
  const int64_t n = xshape[0];
  Tensor x = test::random_tensor(xshape, 42);
  std::vector<float> xv(x.data<float>(), x.data<float>() + x.elements());
  const Value& y = tg.forward(xv, n);
  REQUIRE(y.shape == std::vector<int64_t>{n, 5});

  auto engine = test::make_engine();
  auto model = b.build();
  REQUIRE_MESSAGE(model.is_ok(), model.status().message());
  auto prepared = engine->prepare(model.value());
  REQUIRE_MESSAGE(prepared.is_ok(), prepared.status().message());
  auto session = Session::create(prepared.value());
  REQUIRE(session.is_ok());
  auto out = session.value()->run({x});
  REQUIRE_MESSAGE(out.is_ok(), out.status().message());
  for (int64_t k = 0; k < y.size(); ++k) CHECK(y.data[size_t(k)] == doctest::Approx(out.value()[0].data<float>()[k]).epsilon(1e-4));

  Tensor r = test::random_tensor({n, 5}, 77);
  std::vector<float> rv(r.data<float>(), r.data<float>() + r.elements());
  auto loss = [&]() {
    const Value& yy = tg.forward(xv, n);
    double l = 0;
    for (size_t k = 0; k < rv.size(); ++k) l += double(rv[k]) * yy.data[k];
    return l;
  };
  loss();
  tg.backward(rv);
  REQUIRE(tg.params().size() == params);
  for (int p : tg.params()) {
    std::vector<float> g = tg.param_grad(p).data;
    Value& w = tg.param(p);
    double worst = 0, scale = 1e-3;
    for (size_t k = 0; k < w.data.size(); k += 3) {
      float keep = w.data[k];
      const float h = 1e-2f;
      w.data[k] = keep + h;
      double lp = loss();
      w.data[k] = keep - h;
      double lm = loss();
      w.data[k] = keep;
      double num = (lp - lm) / (2 * h);
      worst = std::max(worst, std::fabs(num - g[k]));
      scale = std::max(scale, std::fabs(num));
    }
    INFO("parameter " << m.graph.tensors[size_t(p)].name);
    CHECK(worst / scale < 2e-2);
  }
}

// A residual block: same-shape Add and Mul (no broadcasting), Relu, Sigmoid, Tanh.
ModelBuilder residual_net() {
  ModelBuilder b("residual");
  b.add_input("x", DataType::kFloat32, std::vector<ir::Dim>{{-1, "N"}, {3, ""}, {5, ""}, {6, ""}});
  b.add_constant("w1", test::random_tensor({4, 3, 1, 1}, 11, -0.5f, 0.5f));
  b.add_constant("w2", test::random_tensor({4, 4, 3, 3}, 12, -0.3f, 0.3f));
  b.add_constant("b2", test::random_tensor({4}, 13));
  b.add_constant("wf", test::random_tensor({5, 4 * 5 * 6}, 14, -0.2f, 0.2f));
  b.add_node("Conv", {"x", "w1"}, {"c1"}, {Attr::Ints("kernel_shape", {1, 1})});
  b.add_node("Relu", {"c1"}, {"r1"});
  b.add_node("Conv", {"r1", "w2", "b2"}, {"c2"}, {Attr::Ints("kernel_shape", {3, 3}), Attr::Ints("pads", {1, 1, 1, 1})});
  b.add_node("Add", {"c2", "r1"}, {"sum"});
  b.add_node("Sigmoid", {"sum"}, {"gate"});
  b.add_node("Mul", {"sum", "gate"}, {"prod"});
  b.add_node("Tanh", {"prod"}, {"t"});
  b.add_node("Flatten", {"t"}, {"f"});
  b.add_node("Gemm", {"f", "wf"}, {"fc"}, {Attr::Int("transB", 1)});
  b.add_node("Softmax", {"fc"}, {"y"}, {Attr::Int("axis", -1)});
  b.add_output("y");
  return b;
}

// The Fashion-MNIST lstm's structure: Transpose -> LSTM -> Squeeze -> LSTM -> Squeeze ->
// Transpose -> Gather(last step) -> Gemm -> Softmax. `states`: initial h / c constants
// ([1, 1, H], which needs batch 1 in the engine).
ModelBuilder lstm_net(bool states) {
  const int64_t T = 4, I = 3, H = 5;
  ModelBuilder b("lstm");
  b.add_input("x", DataType::kFloat32, std::vector<ir::Dim>{{-1, "N"}, {T, ""}, {I, ""}});
  b.add_constant("w1", test::random_tensor({1, 4 * H, I}, 31, -0.6f, 0.6f));
  b.add_constant("r1", test::random_tensor({1, 4 * H, H}, 32, -0.6f, 0.6f));
  b.add_constant("bias1", test::random_tensor({1, 8 * H}, 33, -0.3f, 0.3f));
  b.add_constant("w2", test::random_tensor({1, 4 * H, H}, 34, -0.6f, 0.6f));
  b.add_constant("r2", test::random_tensor({1, 4 * H, H}, 35, -0.6f, 0.6f));
  b.add_constant("h0", test::random_tensor({1, 1, H}, 36, -0.5f, 0.5f));
  b.add_constant("c0", test::random_tensor({1, 1, H}, 37, -0.5f, 0.5f));
  b.add_constant("one", Tensor::from_vector<int64_t>({1}, {1}));
  b.add_constant("last", Tensor::from_vector<int64_t>({}, {-1}));
  b.add_constant("wf", test::random_tensor({5, H}, 38, -0.5f, 0.5f));
  b.add_constant("bf", test::random_tensor({5}, 39));
  b.add_node("Transpose", {"x"}, {"xt"}, {Attr::Ints("perm", {1, 0, 2})});
  if (states)
    b.add_node("LSTM", {"xt", "w1", "r1", "bias1", "", "h0", "c0"}, {"y1"}, {Attr::Int("hidden_size", H)});
  else
    b.add_node("LSTM", {"xt", "w1", "r1", "bias1"}, {"y1"}, {Attr::Int("hidden_size", H)});
  b.add_node("Squeeze", {"y1", "one"}, {"s1"});
  b.add_node("LSTM", {"s1", "w2", "r2"}, {"y2"}, {Attr::Int("hidden_size", H)});
  b.add_node("Squeeze", {"y2", "one"}, {"s2"});
  b.add_node("Transpose", {"s2"}, {"st"}, {Attr::Ints("perm", {1, 0, 2})});
  b.add_node("Gather", {"st", "last"}, {"h"}, {Attr::Int("axis", 1)});
  b.add_node("Gemm", {"h", "wf", "bf"}, {"fc"}, {Attr::Int("transB", 1)});
  b.add_node("Softmax", {"fc"}, {"y"}, {Attr::Int("axis", -1)});
  b.add_output("y");
  return b;
}

}  // namespace

TEST_CASE("training graph: matmul tiles against the plain product over odd shapes") {
  for (int64_t M : {1, 3, 4, 5, 17, 64})
    for (int64_t K : {1, 7, 64})
      for (int64_t N : {1, 8, 15, 16, 17, 40})
        for (int tile : {0, 8, 16})
          for (bool acc : {false, true}) {
            CAPTURE(M); CAPTURE(K); CAPTURE(N); CAPTURE(tile); CAPTURE(acc);
            Tensor a = test::random_tensor({M, K}, 3), b = test::random_tensor({K, N}, 4), c0 = test::random_tensor({M, N}, 5);
            std::vector<float> c(c0.data<float>(), c0.data<float>() + M * N);
            matmul_tiled(tile, a.data<float>(), b.data<float>(), c.data(), M, K, N, acc);
            double worst = 0;
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double ref = acc ? c0.data<float>()[i * N + j] : 0.0;
                for (int64_t k = 0; k < K; ++k) ref += double(a.data<float>()[i * K + k]) * b.data<float>()[k * N + j];
                worst = std::max(worst, std::fabs(ref - c[size_t(i * N + j)]));
              }
            CHECK(worst < 1e-4);
          }
}

TEST_CASE("training graph: LSTM through time (two layers, Transpose, Squeeze, Gather)") {
  check_net(lstm_net(false), {3, 4, 3}, 7);  // w1 r1 bias1 w2 r2 wf bf
  check_net(lstm_net(true), {1, 4, 3}, 7);   // initial states given
}

TEST_CASE("training graph: forward equals the engine, gradients equal finite differences") {
  check_net(net(), {3, 2, 9, 8}, 5);  // w1 b1 w2 wf bf
}

TEST_CASE("training graph: residual Add, Mul, Sigmoid, Tanh without broadcasting") {
  check_net(residual_net(), {2, 3, 5, 6}, 4);  // w1 w2 b2 wf
}

TEST_CASE("training graph: gradients are bit-identical whatever the threads (distill is deterministic)") {
  // Convolution weight gradients sum over the images of a batch: in fixed chunks, so the
  // sums do not depend on which thread took which image.
  ModelBuilder b("conv");
  b.add_input("x", DataType::kFloat32, std::vector<ir::Dim>{{-1, "N"}, {8, ""}, {24, ""}, {24, ""}});
  b.add_constant("w", test::random_tensor({16, 8, 3, 3}, 1, -0.5f, 0.5f));
  b.add_constant("bias", test::random_tensor({16}, 2));
  b.add_node("Conv", {"x", "w", "bias"}, {"y"}, {Attr::Ints("kernel_shape", {3, 3})});
  b.add_output("y");
  const ir::ModelIR m = b.ir();
  Tensor x = test::random_tensor({29, 8, 24, 24}, 11);
  auto grads = [&](int threads) {
    tbb::task_arena arena(threads);
    std::vector<float> out;
    arena.execute([&] {
      TrainGraph tg(m);
      std::vector<float> xv(x.data<float>(), x.data<float>() + x.elements());
      const Value& y = tg.forward(xv, 29);
      std::vector<float> dy(size_t(y.size()));
      for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(int(i % 7) - 3) * 0.37f;
      tg.backward(dy);
      out = tg.param_grad(m.graph.find_tensor("w")).data;
    });
    return out;
  };
  const std::vector<float> one = grads(1);
  for (int run = 0; run < 4; ++run) CHECK(grads(4) == one);
}

TEST_CASE("training graph refuses ops it cannot differentiate, naming the node") {
  ModelBuilder b("bad");
  b.add_input("x", DataType::kFloat32, Shape{1, 4});
  b.add_node("Exp", {"x"}, {"y"}, {}, "my_exp");
  b.add_output("y");
  try {
    TrainGraph tg(b.ir());
    FAIL("expected an error");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()).find("my_exp") != std::string::npos);
  }
}
