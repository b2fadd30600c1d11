// prune-channels: neuron / filter pruning. Removes whole output channels of Conv layers
// (neurons of Gemm / MatMul layers) and physically shrinks the layer, the per-channel ops
// after it (BatchNormalization, depthwise Conv) and its consumer's input columns, so the
// model gets smaller tensors and fewer FLOPs. Channels are chosen by the reconstruction
// error of the NEXT layer's output on calibration images and that layer is re-fitted by
// least squares (refit.h). Pairs are processed in graph order, each against the original
// model's output of its consumer and the current (already pruned) model's inputs, so
// errors upstream are compensated downstream. The last classifier's outputs are never
// removed (it has no consumer layer); see channel_graph.h for which layers qualify.
//
// Options: images=IDX (calibration images, required)  mean=0.2860 std=0.3530
//   raw_shape=NxCxHxW (raw float32 images)  calib=1000 (images used)  rows=8192 (sampled
//   output positions per Conv consumer)  ratio=0.5 (fraction of each eligible layer's
//   channels removed)  ratio@<weight tensor>=R (per layer; 0 leaves it alone)
//   min_channels=1  refit=1 (0: select only, keep the consumer's other weights)
//   intercept=1 (re-fit the consumer's bias too)  ridge=1e-7
#include "channel_graph.h"
#include "refit.h"

#include "../compress_common/dataset.h"
#include "../compress_common/flops.h"
#include "../compress_common/ir_util.h"
#include "../compress_common/train_graph.h"
#include "../compress_common/transform_plugin.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

namespace minnow {
namespace compress {
namespace {

// A forward pass over the calibration images, and shapes from it (constants included).
struct Forward {
  TrainGraph tg;
  Forward(const ir::ModelIR& m, const Images& im) : tg(m) { tg.forward(im.data, im.count); }
  std::vector<int64_t> shape(int t) const {
    try {
      return tg.value(t).shape;
    } catch (const std::out_of_range&) {
      return {};
    }
  }
};

void prune_channels(TransformContext& ctx) {
  ir::ModelIR& m = ctx.model;
  const Options& o = ctx.options;
  const std::string images = o.get_string("images", "");
  if (images.empty())
    throw std::runtime_error("prune-channels: option images=<idx file> is required (calibration images)");
  const float mean = float(o.get_double("mean", 0.2860)), stdv = float(o.get_double("std", 0.3530));
  const std::string raw_shape = o.get_string("raw_shape", "");
  const int64_t calib = o.get_int("calib", 1000);
  const int64_t rows_wanted = o.get_int("rows", 8192);
  const double ratio = o.get_double("ratio", 0.5);
  const int64_t min_channels = o.get_int("min_channels", 1);
  channels::FitOptions fo;
  fo.refit = o.get_bool("refit", true);
  const bool intercept = o.get_bool("intercept", true);
  fo.ridge = o.get_double("ridge", 1e-7);
  if (ratio < 0 || ratio >= 1) throw std::runtime_error("prune-channels: ratio must be in [0, 1)");
  if (calib < 1 || rows_wanted < 1 || min_channels < 1 || fo.ridge < 0)
    throw std::runtime_error("prune-channels: calib, rows and min_channels must be >= 1, ridge >= 0");

  Images data = load_images(images, mean, stdv, raw_shape);
  data.count = std::min(data.count, calib);
  data.data.resize(size_t(data.count * data.sample_size()));

  const ir::ModelIR original = m;
  Forward f0(original, data);
  auto shape0 = [&](int t) { return f0.shape(t); };
  const int64_t flops_before = model_flops(original, shape0);
  std::vector<channels::Pair> pairs = channels::find_pairs(original, shape0);

  // Per-layer overrides, by the producer's weight tensor name; unknown names are errors.
  for (const auto& kv : o.all())
    if (kv.first.rfind("ratio@", 0) == 0) {
      bool known = false;
      for (const auto& p : pairs) known = known || kv.first == "ratio@" + p.weight;
      if (!known) throw std::runtime_error("prune-channels: '" + kv.first.substr(6) + "' is not the weight of a prunable layer");
    }

  std::mt19937_64 rng(ctx.seed);
  char line[320];
  std::snprintf(line, sizeof line, "prune-channels (ratio %g, %lld calibration images, %zu prunable layer(s)):\n", ratio,
                (long long)data.count, pairs.size());
  ctx.report << line;
  std::string per_layer;
  for (const auto& p : pairs) {
    const double r = o.get_double("ratio@" + p.weight, ratio);
    if (r < 0 || r >= 1) throw std::runtime_error("prune-channels: ratio@" + p.weight + " must be in [0, 1)");
    fo.remove = std::min(p.channels - min_channels, int64_t(std::llround(r * double(p.channels))));
    const std::string prod_name = m.graph.nodes[size_t(p.producer)].name;
    if (fo.remove <= 0) {
      std::snprintf(line, sizeof line, "  %-24s %4lld channels kept\n", p.weight.c_str(), (long long)p.channels);
      ctx.report << line;
      continue;
    }
    Forward cur(m, data);
    const ir::Node& cons = m.graph.nodes[size_t(p.consumer)];
    const int x_t = cons.inputs[0];
    std::vector<int64_t> ws = cur.shape(cons.inputs[1]);
    const int64_t kh = ws.size() == 4 ? ws[2] : 1, kw = ws.size() == 4 ? ws[3] : 1;
    auto pos = channels::sample_positions(cons, cur.tg.value(x_t), kh, kw, rows_wanted, rng);
    int64_t rows = 0, outputs = 0, outputs0 = 0;
    std::vector<float> xc = channels::input_rows(cons, cur.tg.value(x_t), kh, kw, pos, &rows);
    std::vector<float> xo = channels::input_rows(original.graph.nodes[size_t(p.consumer)], f0.tg.value(x_t), kh, kw, pos, &rows);
    std::vector<float> w = channels::consumer_matrix(m, p, &outputs);
    std::vector<float> w0 = channels::consumer_matrix(original, p, &outputs0);
    if (outputs != outputs0) throw std::runtime_error("prune-channels: " + cons.describe() + ": consumer changed before its turn");
    // Target: the original consumer's output before its bias, Y = X0 W0^T.
    const int64_t cols = p.channels * p.group;
    std::vector<float> y(size_t(rows * outputs), 0.f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < outputs; ++j) {
        double s = 0;
        for (int64_t k = 0; k < cols; ++k) s += double(xo[size_t(i * cols + k)]) * w0[size_t(j * cols + k)];
        y[size_t(i * outputs + j)] = float(s);
      }
    fo.intercept = intercept && fo.refit && channels::consumer_can_have_bias(m, p);
    channels::FitResult fit = channels::select_and_refit(xc, y, w, rows, p.channels, p.group, outputs, fo);
    std::vector<float> bias = channels::consumer_bias(m, p, outputs);
    channels::shrink_producer_and_chain(m, p, fit.keep);
    channels::set_consumer_matrix(m, p, fit.weight, outputs, int64_t(fit.keep.size()));
    if (fo.intercept) {
      for (int64_t j = 0; j < outputs; ++j) bias[size_t(j)] += fit.bias_delta[size_t(j)];
      channels::set_consumer_bias(m, p, bias);
    }
    std::snprintf(line, sizeof line,
                  "  %-24s %4lld -> %4lld channels  consumer %-20s rel. error %.2e -> %.2e (%lld rows)\n", p.weight.c_str(),
                  (long long)p.channels, (long long)fit.keep.size(), cons.name.c_str(), fit.rel_err_before,
                  fit.rel_err_after, (long long)rows);
    ctx.report << line;
    per_layer += ",\"ratio@" + json_escape(p.weight) + "\":" + std::to_string(r);
  }
  compact(m);
  // The result must still run: one more forward, which also gives the FLOPs after.
  Images one = data;
  one.count = std::min<int64_t>(data.count, 8);
  one.data.resize(size_t(one.count * one.sample_size()));
  Forward f1(m, one);
  const int64_t flops_after = model_flops(m, [&](int t) { return f1.shape(t); });
  std::snprintf(line, sizeof line, "  FLOPs per image (Conv/Gemm/MatMul): %lld -> %lld (%.2fx fewer)\n",
                (long long)flops_before, (long long)flops_after,
                flops_after ? double(flops_before) / double(flops_after) : 0.0);
  ctx.report << line;
  std::snprintf(line, sizeof line,
                "{\"ratio\":%g,\"criterion\":\"reconstruction\",\"refit\":%s,\"calib\":%lld,\"rows\":%lld,\"min_channels\":%lld,"
                "\"flops_before\":%lld,\"flops_after\":%lld",
                ratio, fo.refit ? "true" : "false", (long long)data.count, (long long)rows_wanted, (long long)min_channels,
                (long long)flops_before, (long long)flops_after);
  ctx.parameters = line + per_layer + "}";
}

}  // namespace
}  // namespace compress
}  // namespace minnow

MINNOW_DEFINE_TRANSFORM("prune-channels", "0.1.0",
                        "channel (neuron) pruning by next-layer reconstruction error, with a least-squares re-fit",
                        minnow::compress::prune_channels)
