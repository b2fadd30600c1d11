// Runs a model (bytes) over preprocessed images through the engine, in batches, and
// measures top-1 accuracy. Used by transforms (teacher logits, saliency statistics) and
// by `minnow compress`.
#pragma once

#include "dataset.h"

#include <minnow/minnow.h>

#include <memory>
#include <string>
#include <vector>

namespace minnow {
namespace compress {

class Runner {
 public:
  // `plugin_dir` empty: the engine's default plugin folder (relative to libminnow).
  Runner(std::shared_ptr<const Model> model, const std::string& plugin_dir = "", int threads = 1);
  // Logits [count, classes] for images [first, first + count).
  std::vector<float> logits(const Images& im, int64_t first, int64_t count, int64_t* classes);
  const Model& model() const { return *model_; }

 private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Session> session_;
  std::string input_;
  std::vector<int64_t> input_shape_;  // declared; dim 0 = batch (-1 when symbolic)
};

// Accuracy in [0, 1] of argmax(logits) against labels over min(images, labels, limit).
double accuracy(Runner& r, const Images& im, const std::vector<int32_t>& labels, int64_t limit = -1);

}  // namespace compress
}  // namespace minnow
