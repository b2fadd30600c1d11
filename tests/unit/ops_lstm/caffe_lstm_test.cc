// caffe::LSTM against a naive reference of Caffe's LSTM layer (gate order i, f, o, g;
// cont resets the state), plus its shape checks.
#include "test_util.h"

#include <doctest/doctest.h>

#include <random>

using namespace minnow;

namespace {

std::vector<float> rnd(size_t n, std::mt19937& g) {
  std::uniform_real_distribution<float> d(-0.6f, 0.6f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// Caffe LSTM, from the layer's definition: h' = cont*h; gates = Wxc x + b + Whc h'.
std::vector<float> caffe_ref(int64_t T, int64_t N, int64_t I, int64_t H, const std::vector<float>& x,
                             const std::vector<float>* cont, const std::vector<float>& wx, const std::vector<float>& b,
                             const std::vector<float>& wh, std::vector<double>* hT, std::vector<double>* cT) {
  std::vector<float> y(size_t(T * N * H));
  std::vector<double> h(size_t(N * H), 0.0), c(size_t(N * H), 0.0);
  auto sg = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      double k = cont ? (*cont)[size_t(t * N + n)] : (t == 0 ? 0.0 : 1.0);
      std::vector<double> gate(size_t(4 * H));
      for (int64_t r = 0; r < 4 * H; ++r) {
        double s = b[size_t(r)];
        for (int64_t i = 0; i < I; ++i) s += wx[size_t(r * I + i)] * x[size_t((t * N + n) * I + i)];
        for (int64_t j = 0; j < H; ++j) s += wh[size_t(r * H + j)] * k * h[size_t(n * H + j)];
        gate[size_t(r)] = s;
      }
      for (int64_t j = 0; j < H; ++j) {
        double ig = sg(gate[size_t(j)]), fg = sg(gate[size_t(H + j)]), og = sg(gate[size_t(2 * H + j)]),
               gg = std::tanh(gate[size_t(3 * H + j)]);
        double& cc = c[size_t(n * H + j)];
        cc = k * fg * cc + ig * gg;
        h[size_t(n * H + j)] = og * std::tanh(cc);
        y[size_t((t * N + n) * H + j)] = float(h[size_t(n * H + j)]);
      }
    }
  *hT = h;
  *cT = c;
  return y;
}

}  // namespace

TEST_CASE("caffe::LSTM matches Caffe's LSTM layer, with and without cont") {
  auto engine = test::make_engine();
  std::mt19937 g(42);
  for (int it = 0; it < 24; ++it) {
    const int64_t T = 1 + it % 5, N = 1 + (it * 7) % 4, I = 1 + (it * 5) % 13, H = 1 + (it * 11) % 29;
    const bool with_cont = it % 2 == 0;
    auto x = rnd(size_t(T * N * I), g), wx = rnd(size_t(4 * H * I), g), b = rnd(size_t(4 * H), g),
         wh = rnd(size_t(4 * H * H), g);
    std::vector<float> cont(size_t(T * N));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t n = 0; n < N; ++n) cont[size_t(t * N + n)] = (t == 0 || (t + n) % 3 == 0) ? 0.f : 1.f;
    ModelBuilder mb("caffe_lstm");
    mb.add_input("x", DataType::kFloat32, Shape{T, N, I});
    std::vector<Tensor> feeds{Tensor::from_vector<float>({T, N, I}, x)};
    if (with_cont) {
      mb.add_input("cont", DataType::kFloat32, Shape{T, N});
      feeds.push_back(Tensor::from_vector<float>({T, N}, cont));
    }
    mb.add_constant("wx", Tensor::from_vector<float>({4 * H, I}, wx));
    mb.add_constant("b", Tensor::from_vector<float>({4 * H}, b));
    mb.add_constant("wh", Tensor::from_vector<float>({4 * H, H}, wh));
    mb.add_node("LSTM", {"x", with_cont ? "cont" : "", "wx", "b", "wh"}, {"h", "hT", "cT"},
                {Attr::Int("num_output", H)}, "lstm1", "caffe", 1);
    mb.add_output("h");
    mb.add_output("hT");
    mb.add_output("cT");
    auto model = mb.build();
    REQUIRE_MESSAGE(model, model.status().message());
    auto pm = engine->prepare(model.value());
    REQUIRE_MESSAGE(pm, pm.status().message());
    CHECK(pm.value()->choices().at(0).backend == "ops_lstm");
    SessionOptions so;
    so.threads = 1 + it % 3;
    auto s = Session::create(pm.value(), so);
    auto r = s.value()->run(feeds);
    REQUIRE_MESSAGE(r, r.status().message());
    std::vector<double> hT, cT;
    auto want = caffe_ref(T, N, I, H, x, with_cont ? &cont : nullptr, wx, b, wh, &hT, &cT);
    CAPTURE(it);
    float m = 0;
    for (size_t i = 0; i < want.size(); ++i) m = std::max(m, std::fabs(want[i] - r.value()[0].data<float>()[i]));
    for (size_t i = 0; i < hT.size(); ++i) {
      m = std::max(m, float(std::fabs(hT[i] - r.value()[1].data<float>()[i])));
      m = std::max(m, float(std::fabs(cT[i] - r.value()[2].data<float>()[i])));
    }
    CHECK(m < 2e-5f);
  }
}

TEST_CASE("caffe::LSTM refuses weights that disagree, naming the node") {
  auto engine = test::make_engine();
  ModelBuilder mb("bad");
  mb.add_input("x", DataType::kFloat32, Shape{2, 1, 3});
  mb.add_constant("wx", test::random_tensor({8, 4}, 1));  // I should be 3
  mb.add_constant("b", test::random_tensor({8}, 2));
  mb.add_constant("wh", test::random_tensor({8, 2}, 3));
  mb.add_node("LSTM", {"x", "", "wx", "b", "wh"}, {"h"}, {}, "broken_lstm", "caffe", 1);
  mb.add_output("h");
  auto model = mb.build();
  std::string msg;
  if (!model) msg = model.status().message();
  else {
    auto pm = engine->prepare(model.value());
    REQUIRE_FALSE(pm);
    msg = pm.status().message();
  }
  CHECK(msg.find("broken_lstm") != std::string::npos);
  CHECK(msg.find("columns") != std::string::npos);
}
