// End to end: the Fashion-MNIST LSTM (tests/data/fashion_mnist/lstm, ONNX, imported by
// the ONNX frontend) reproduces its reference outputs within 1e-4 and its test accuracy
// 0.8895 within 0.1 point on the 10k test images (Debian package dataset-fashion-mnist).
#include "tensor_io.h"
#include "test_util.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

using namespace minnow;

namespace {

const std::string kDir = std::string(MINNOW_SOURCE_DIR) + "/tests/data/fashion_mnist/lstm/";
const std::string kImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
const std::string kLabels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";

Tensor read_pb(const std::string& path) {
  auto r = cli::read_tensor_file(path);
  REQUIRE_MESSAGE(r, r.status().message());
  return std::move(r.value());
}

// Null (with a warning) while another op of the model has no kernel yet (the LSTM model
// also needs Gather, Slice, ConstantOfShape ... from cpu_dense); any other failure fails.
std::shared_ptr<const PreparedModel> load(const std::string& file) {
  static auto engine = test::make_engine();
  auto m = engine->load_model(kDir + file);
  REQUIRE_MESSAGE(m, m.status().message());
  auto pm = engine->prepare(m.value());
  if (!pm && pm.status().message().find("no backend can run it") != std::string::npos &&
      pm.status().message().find("LSTM node") == std::string::npos) {
    WARN_MESSAGE(false, "skipped, a non-recurrent op has no kernel yet: " << pm.status().message());
    return nullptr;
  }
  REQUIRE_MESSAGE(pm, pm.status().message());
  bool lstm_by_plugin = false;
  for (const auto& c : pm.value()->choices())
    if (m.value()->graph().nodes[c.node].op == "LSTM") lstm_by_plugin = c.backend == "ops_lstm";
  CHECK(lstm_by_plugin);
  return pm.value();
}

}  // namespace

TEST_CASE("fashion_mnist lstm: reference outputs within 1e-4") {
  for (const char* file : {"lstm.onnx", "lstm_dynN.onnx"})
    for (const char* set : {"test_data_set_0", "test_data_set_1"}) {
      Tensor x = read_pb(kDir + set + "/input_0.pb"), want = read_pb(kDir + set + "/output_0.pb");
      if (std::string(file) == "lstm.onnx" && x.shape()[0] != 1) continue;  // batch-1 model
      auto pm = load(file);
      if (!pm) return;
      auto s = Session::create(pm);
      REQUIRE(s);
      auto r = s.value()->run({x});
      REQUIRE_MESSAGE(r, r.status().message());
      CAPTURE(file);
      CAPTURE(set);
      CHECK(test::max_abs_diff(r.value()[0], want) <= 1e-4f);
    }
}

TEST_CASE("fashion_mnist lstm: test accuracy 0.8895 within 0.1 point") {
  if (!std::ifstream(kImages) || !std::ifstream(kLabels)) {
    MESSAGE("skipped: install dataset-fashion-mnist for the 10k test images");
    return;
  }
  auto ib = cli::read_maybe_gzip(kImages);
  auto lb = cli::read_maybe_gzip(kLabels);
  REQUIRE(ib);
  REQUIRE(lb);
  auto images = cli::parse_idx_images(ib.value().data(), ib.value().size(), kImages);
  auto labels = cli::parse_idx_labels(lb.value().data(), lb.value().size(), kLabels);
  REQUIRE(images);
  REQUIRE(labels);
  SessionOptions so;
  so.threads = 2;
  auto pm = load("lstm_dynN.onnx");
  if (!pm) return;
  auto s = Session::create(pm, so);
  REQUIRE(s);
  const int64_t n = images.value().count, batch = 250;
  int64_t correct = 0;
  for (int64_t b0 = 0; b0 < n; b0 += batch) {
    const int64_t m = std::min(batch, n - b0);
    Tensor x(DataType::kFloat32, {m, 28, 28});
    for (int64_t i = 0; i < m * 784; ++i)
      x.data<float>()[i] = (images.value().pixels[size_t(b0 * 784 + i)] / 255.f - 0.2860f) / 0.3530f;
    auto r = s.value()->run({x});
    REQUIRE_MESSAGE(r, r.status().message());
    const float* lg = r.value()[0].data<float>();
    for (int64_t i = 0; i < m; ++i) {
      int best = 0;
      for (int c = 1; c < 10; ++c)
        if (lg[i * 10 + c] > lg[i * 10 + best]) best = c;
      correct += best == labels.value()[size_t(b0 + i)];
    }
  }
  const double acc = double(correct) / double(n);
  MESSAGE("fashion_mnist lstm accuracy: " << acc);
  CHECK(std::fabs(acc - 0.8895) <= 0.001);
}
