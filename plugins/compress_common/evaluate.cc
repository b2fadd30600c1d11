#include "evaluate.h"

#include <algorithm>
#include <stdexcept>

namespace minnow {
namespace compress {

Runner::Runner(std::shared_ptr<const Model> model, const std::string& plugin_dir, int threads) : model_(std::move(model)) {
  EngineOptions eo;
  if (!plugin_dir.empty()) {
    eo.plugin_paths = {plugin_dir};
    eo.use_default_folder = false;
    eo.use_environment = false;
  }
  auto engine = Engine::create(eo);
  if (!engine) throw std::runtime_error(engine.status().message());
  auto prepared = engine.value()->prepare(model_);
  if (!prepared) throw std::runtime_error(prepared.status().message());
  SessionOptions so;
  so.threads = threads;
  auto s = Session::create(prepared.value(), so);
  if (!s) throw std::runtime_error(s.status().message());
  session_ = std::move(s.value());
  const auto& g = model_->graph();
  if (g.inputs.size() != 1) throw std::runtime_error("model has " + std::to_string(g.inputs.size()) + " inputs; image data feeds models with one");
  const auto& in = g.tensors[size_t(g.inputs[0])];
  input_ = in.name;
  input_shape_ = in.static_shape();
}

std::vector<float> Runner::logits(const Images& im, int64_t first, int64_t count, int64_t* classes) {
  Shape shape = input_shape_;
  if (shape.empty()) throw std::runtime_error("model input '" + input_ + "' has no rank");
  int64_t per = 1;
  for (size_t k = 1; k < shape.size(); ++k) per *= shape[k] < 0 ? 0 : shape[k];
  if (per != im.sample_size())
    throw std::runtime_error("model input '" + input_ + "' " + shape_to_string(shape) + " does not take samples of " +
                             std::to_string(im.sample_size()) + " values");
  // A fixed batch dimension is used as is (a batch-1 model runs one image at a time).
  const int64_t step = shape[0] > 0 ? shape[0] : std::min<int64_t>(count, 256);
  std::vector<float> out;
  *classes = 0;
  for (int64_t b = first; b < first + count; b += step) {
    int64_t n = std::min(step, first + count - b);
    Shape s = shape;
    s[0] = shape[0] > 0 ? shape[0] : n;
    Tensor x(DataType::kFloat32, s);
    std::copy(im.data.begin() + b * per, im.data.begin() + (b + n) * per, x.data<float>());
    auto st = session_->set_input(input_, x);
    if (!st) throw std::runtime_error(st.message());
    st = session_->run();
    if (!st) throw std::runtime_error(st.message());
    auto y = session_->output(0);
    if (!y) throw std::runtime_error(y.status().message());
    const Tensor& t = y.value();
    if (t.dtype() != DataType::kFloat32 || t.shape().size() != 2) throw std::runtime_error("model output is not float [N, classes]");
    *classes = t.shape()[1];
    out.insert(out.end(), t.data<float>(), t.data<float>() + n * *classes);
  }
  return out;
}

double accuracy(Runner& r, const Images& im, const std::vector<int32_t>& labels, int64_t limit) {
  int64_t n = std::min<int64_t>(im.count, int64_t(labels.size()));
  if (limit >= 0) n = std::min(n, limit);
  if (n == 0) return 0;
  int64_t correct = 0;
  for (int64_t b = 0; b < n; b += 1000) {
    int64_t c = std::min<int64_t>(1000, n - b), k = 0;
    std::vector<float> y = r.logits(im, b, c, &k);
    for (int64_t i = 0; i < c; ++i) {
      const float* row = &y[size_t(i * k)];
      int64_t best = std::max_element(row, row + k) - row;
      correct += best == labels[size_t(b + i)];
    }
  }
  return double(correct) / double(n);
}

}  // namespace compress
}  // namespace minnow
