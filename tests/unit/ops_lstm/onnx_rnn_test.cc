// ONNX RNN / LSTM / GRU through the real plugin path (ModelBuilder -> Engine with the
// build's plugins -> Session), compared with the naive reference in rnn_reference.h over
// many shapes and attribute combinations, plus known answers.
#include "rnn_reference.h"
#include "test_util.h"

#include <doctest/doctest.h>

#include <random>

using namespace minnow;

namespace {

std::shared_ptr<Engine> engine() {
  static auto e = test::make_engine();
  return e;
}

std::vector<float> rnd(size_t n, std::mt19937& g, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

bool uses_alpha(const std::string& a) {
  return a == "Affine" || a == "LeakyRelu" || a == "ThresholdedRelu" || a == "ScaledTanh" || a == "HardSigmoid" || a == "Elu";
}
bool uses_beta(const std::string& a) { return a == "Affine" || a == "ScaledTanh" || a == "HardSigmoid"; }

struct RunOptions {
  bool const_weights = true;
  int threads = 1;
  bool explicit_acts = false;
  bool outputs_all = true;
};

// Builds the node, runs it, returns (Y, Y_h, Y_c). Y_c only for LSTM.
ref::Result run_engine(const ref::Problem& p, const RunOptions& o, std::string* backend = nullptr) {
  const int64_t S = p.seq, N = p.batch, I = p.input, H = p.hidden, D = p.dirs, G = ref::gates_of(p.op);
  ModelBuilder b("rnn");
  Shape xs = p.layout ? Shape{N, S, I} : Shape{S, N, I};
  Shape ss = p.layout ? Shape{N, D, H} : Shape{D, N, H};
  b.add_input("X", DataType::kFloat32, xs);
  std::vector<Tensor> feeds{Tensor::from_vector<float>(xs, p.X)};
  auto weight = [&](const std::string& name, Shape shape, const std::vector<float>& v) {
    if (o.const_weights) {
      b.add_constant(name, Tensor::from_vector<float>(shape, v));
    } else {
      b.add_input(name, DataType::kFloat32, shape);
      feeds.push_back(Tensor::from_vector<float>(shape, v));
    }
  };
  weight("W", {D, G * H, I}, p.W);
  weight("R", {D, G * H, H}, p.R);
  std::vector<std::string> ins{"X", "W", "R", "", "", "", "", ""};
  if (!p.B.empty()) { weight("B", {D, 2 * G * H}, p.B); ins[3] = "B"; }
  if (!p.lens.empty()) {
    b.add_input("lens", DataType::kInt32, Shape{N});
    feeds.push_back(Tensor::from_vector<int32_t>({N}, p.lens));
    ins[4] = "lens";
  }
  if (!p.h0.empty()) {
    b.add_input("h0", DataType::kFloat32, ss);
    feeds.push_back(Tensor::from_vector<float>(ss, p.h0));
    ins[5] = "h0";
  }
  if (!p.c0.empty()) {
    b.add_input("c0", DataType::kFloat32, ss);
    feeds.push_back(Tensor::from_vector<float>(ss, p.c0));
    ins[6] = "c0";
  }
  if (!p.P.empty()) { weight("P", {D, 3 * H}, p.P); ins[7] = "P"; }
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  std::vector<Attr> attrs{Attr::Int("hidden_size", H)};
  attrs.push_back(Attr::String("direction", D == 2 ? "bidirectional" : p.reverse ? "reverse" : "forward"));
  if (p.layout) attrs.push_back(Attr::Int("layout", 1));
  if (p.clip > 0) attrs.push_back(Attr::Float("clip", float(p.clip)));
  if (p.input_forget) attrs.push_back(Attr::Int("input_forget", 1));
  if (p.linear_before_reset) attrs.push_back(Attr::Int("linear_before_reset", 1));
  if (o.explicit_acts) {
    std::vector<std::string> names;
    std::vector<float> al, be;
    for (const auto& a : p.acts) {
      names.push_back(a.name);
      if (uses_alpha(a.name)) al.push_back(float(a.alpha));
      if (uses_beta(a.name)) be.push_back(float(a.beta));
    }
    attrs.push_back(Attr::Strings("activations", names));
    if (!al.empty()) attrs.push_back(Attr::Floats("activation_alpha", al));
    if (!be.empty()) attrs.push_back(Attr::Floats("activation_beta", be));
  }
  std::vector<std::string> outs{"Y", "Y_h"};
  if (p.op == "LSTM") outs.push_back("Y_c");
  b.add_node(p.op, ins, outs, attrs, "rnn_node", "", 14);
  for (auto& n : outs) b.add_output(n);
  auto model = b.build();
  REQUIRE_MESSAGE(model, model.status().message());
  auto pm = engine()->prepare(model.value());
  REQUIRE_MESSAGE(pm, pm.status().message());
  if (backend) *backend = pm.value()->choices().at(0).backend;
  SessionOptions so;
  so.threads = o.threads;
  auto s = Session::create(pm.value(), so);
  REQUIRE_MESSAGE(s, s.status().message());
  auto r = s.value()->run(feeds);
  REQUIRE_MESSAGE(r, r.status().message());
  ref::Result out;
  auto vec = [](const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.elements()); };
  out.Y = vec(r.value()[0]);
  out.Yh = vec(r.value()[1]);
  if (p.op == "LSTM") out.Yc = vec(r.value()[2]);
  return out;
}

// Largest difference relative to max(1, |reference|): unbounded activations (Affine,
// Relu ...) can grow values far above 1, where float32 keeps only relative precision.
float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(b[i])) return INFINITY;  // the case itself is unusable
    m = std::max(m, std::fabs(a[i] - b[i]) / std::max(1.f, std::fabs(b[i])));
  }
  return m;
}

ref::Problem random_problem(const std::string& op, std::mt19937& g, bool exotic) {
  ref::Problem p;
  p.op = op;
  std::uniform_int_distribution<int> small(1, 5), hid(1, 37), coin(0, 1);
  p.seq = small(g);
  p.batch = small(g);
  p.input = std::uniform_int_distribution<int>(1, 23)(g);
  p.hidden = hid(g);
  int dir = std::uniform_int_distribution<int>(0, 2)(g);
  p.dirs = dir == 2 ? 2 : 1;
  p.reverse = dir == 1;
  p.layout = coin(g);
  const int64_t G = ref::gates_of(op), D = p.dirs, H = p.hidden, N = p.batch;
  // Exotic activations can be unbounded: smaller weights keep the values moderate.
  const float wr = exotic ? 0.25f : 0.5f;
  p.W = rnd(size_t(D * G * H * p.input), g, -wr, wr);
  p.R = rnd(size_t(D * G * H * H), g, -wr, wr);
  p.X = rnd(size_t(p.seq * N * p.input), g);
  if (coin(g)) p.B = rnd(size_t(D * 2 * G * H), g);
  if (coin(g)) p.h0 = rnd(size_t(D * N * H), g);
  if (op == "LSTM" && coin(g)) p.c0 = rnd(size_t(D * N * H), g);
  if (op == "LSTM" && coin(g)) p.P = rnd(size_t(D * 3 * H), g);
  if (coin(g)) {
    for (int64_t b = 0; b < N; ++b) p.lens.push_back(std::uniform_int_distribution<int32_t>(0, int32_t(p.seq))(g));
  }
  if (coin(g)) p.clip = std::uniform_real_distribution<double>(0.2, 2.0)(g);
  if (op == "LSTM" && coin(g) && coin(g)) p.input_forget = true;
  if (op == "GRU") p.linear_before_reset = coin(g);
  const std::vector<std::string> def = op == "LSTM" ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                       : op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                     : std::vector<std::string>{"Tanh"};
  static const char* all[] = {"Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
                              "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  for (int64_t d = 0; d < D; ++d)
    for (const auto& name : def) {
      ref::Act a;
      a.name = exotic ? all[std::uniform_int_distribution<int>(0, 10)(g)] : name;
      // Parameters as the ONNX ops' defaults or random ones.
      a.alpha = std::uniform_real_distribution<double>(0.1, 1.5)(g);
      a.beta = std::uniform_real_distribution<double>(-0.5, 0.8)(g);
      if (a.name == "ThresholdedRelu") a.alpha = std::uniform_real_distribution<double>(-0.3, 0.3)(g);
      p.acts.push_back(a);
    }
  return p;
}

void check_case(const ref::Problem& p, const RunOptions& o, float tol) {
  ref::Result want = ref::run(p);
  ref::Result got = run_engine(p, o);
  CAPTURE(p.op);
  CAPTURE(p.seq); CAPTURE(p.batch); CAPTURE(p.input); CAPTURE(p.hidden); CAPTURE(p.dirs);
  CAPTURE(p.reverse); CAPTURE(p.layout); CAPTURE(p.clip); CAPTURE(p.lens.size());
  CAPTURE(o.const_weights); CAPTURE(o.threads);
  CHECK(max_diff(got.Y, want.Y) <= tol);
  CHECK(max_diff(got.Yh, want.Yh) <= tol);
  if (p.op == "LSTM") CHECK(max_diff(got.Yc, want.Yc) <= tol);
}

}  // namespace

TEST_CASE("RNN/LSTM/GRU match the naive reference over random shapes and attributes") {
  std::mt19937 g(1234);
  for (const char* op : {"RNN", "LSTM", "GRU"}) {
    for (int i = 0; i < 40; ++i) {
      ref::Problem p = random_problem(op, g, false);
      RunOptions o;
      o.const_weights = i % 3 != 0;  // also the run-time packing path (weights as inputs)
      o.threads = i % 2 ? 3 : 1;
      o.explicit_acts = i % 4 == 0;
      check_case(p, o, 2e-5f);
    }
  }
}

TEST_CASE("every listed activation function, with alpha/beta consumed in order") {
  std::mt19937 g(99);
  for (const char* op : {"RNN", "LSTM", "GRU"}) {
    for (int i = 0; i < 30; ++i) {
      ref::Problem p = random_problem(op, g, true);
      RunOptions o;
      o.explicit_acts = true;
      o.threads = 2;
      check_case(p, o, 5e-5f);
    }
  }
}

TEST_CASE("larger shapes, several threads (GEMMs split across the arena)") {
  std::mt19937 g(7);
  for (const char* op : {"LSTM", "GRU"}) {
    ref::Problem p = random_problem(op, g, false);
    p.seq = 9; p.batch = 13; p.input = 70; p.hidden = 67;
    p.dirs = 2; p.reverse = false; p.layout = 0; p.lens.clear(); p.clip = 0; p.input_forget = false;
    const int64_t G = ref::gates_of(op);
    p.W = rnd(size_t(2 * G * 67 * 70), g, -0.2f, 0.2f);
    p.R = rnd(size_t(2 * G * 67 * 67), g, -0.2f, 0.2f);
    p.X = rnd(size_t(9 * 13 * 70), g);
    p.B = rnd(size_t(2 * 2 * G * 67), g);
    p.h0.clear(); p.c0.clear(); p.P.clear();
    p.acts.resize(size_t(2 * (op == std::string("LSTM") ? 3 : 2)));
    for (size_t k = 0; k < p.acts.size(); ++k)
      p.acts[k].name = (k % (op == std::string("LSTM") ? 3 : 2)) == 0 ? "Sigmoid" : "Tanh";
    RunOptions o;
    o.threads = 4;
    check_case(p, o, 5e-5f);
  }
}

TEST_CASE("known answer: one LSTM step with unit weights") {
  // I = H = 1, every weight 1, no bias, x = 1: every gate's input is 1, so
  // i = o = f = sigmoid(1), g = tanh(1), c = i*g, h = o*tanh(c).
  ref::Problem p;
  p.op = "LSTM";
  p.W = {1, 1, 1, 1};
  p.R = {1, 1, 1, 1};
  p.X = {1};
  p.acts = {{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
  ref::Result got = run_engine(p, RunOptions{});
  const double s = 1 / (1 + std::exp(-1.0)), c = s * std::tanh(1.0), h = s * std::tanh(c);
  CHECK(got.Y[0] == doctest::Approx(h).epsilon(1e-6));
  CHECK(got.Yc[0] == doctest::Approx(c).epsilon(1e-6));
  CHECK(got.Yc[0] == doctest::Approx(0.5567700).epsilon(1e-6));
}

TEST_CASE("known answer: RNN with Relu, identity recurrence, sequence_lens and reverse") {
  // h_t = relu(x_t + h_{t-1}): a running sum of the positive prefix; batch row 1 stops
  // after 2 steps (its Y rows beyond are zero).
  ref::Problem p;
  p.op = "RNN";
  p.seq = 3;
  p.batch = 2;
  p.W = {1};
  p.R = {1};
  p.X = {1, 10, 2, 20, 3, 30};  // [t][b]
  p.lens = {3, 2};
  p.acts = {{"Relu"}};
  RunOptions o;
  o.explicit_acts = true;
  ref::Result got = run_engine(p, o);
  CHECK(got.Y == std::vector<float>{1, 10, 3, 30, 6, 0});
  CHECK(got.Yh == std::vector<float>{6, 30});
  p.reverse = true;
  got = run_engine(p, o);
  // Reverse: row 0 runs t = 2,1,0 -> 3, 5, 6; row 1 runs t = 1,0 -> 20, 30.
  CHECK(got.Y == std::vector<float>{6, 30, 5, 20, 3, 0});
  CHECK(got.Yh == std::vector<float>{6, 30});
}

TEST_CASE("the ops_lstm backend wins the recurrent nodes") {
  std::mt19937 g(5);
  ref::Problem p = random_problem("LSTM", g, false);
  std::string backend;
  run_engine(p, RunOptions{}, &backend);
  CHECK(backend == "ops_lstm");
}
