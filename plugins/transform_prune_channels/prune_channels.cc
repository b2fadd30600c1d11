// prune-channels: neuron / filter pruning. Removes whole output channels of Conv layers
// (neurons of Gemm / MatMul layers) and physically shrinks the layer, the per-channel ops
// after it (BatchNormalization, depthwise Conv) and its consumer's input columns, so the
// model gets smaller tensors and fewer FLOPs. Channels are chosen by the reconstruction
// error of the NEXT layers' outputs on calibration images and those layers are re-fitted
// by least squares (refit.h). A channel group (channel_graph.h: e.g. the producers whose
// outputs a residual Add sums, and every layer reading that sum) loses one channel set,
// chosen by the summed relative error of all its consumers. Groups are processed in graph
// order, each against the original model's outputs of its consumers and the current
// (already pruned) model's inputs, so errors upstream are compensated downstream. The
// last classifier's outputs are never removed (it has no consumer layer).
//
// Options: images=IDX (calibration images, required)  mean=0.2860 std=0.3530
//   raw_shape=NxCxHxW (raw float32 images)  calib=1000 (images used)  rows=8192 (sampled
//   output positions per Conv consumer)  ratio=0.5 (fraction of each eligible layer's
//   channels removed)  ratio@<weight tensor>=R (per layer, by any producer of
//   the group; 0 leaves it alone)
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
  std::vector<channels::Group> groups = channels::find_groups(original, shape0);

  // Per-layer overrides, by a producer's weight tensor name; unknown names are errors, and
  // so are two different ratios for producers of one group (they lose the same channels).
  for (const auto& kv : o.all())
    if (kv.first.rfind("ratio@", 0) == 0) {
      bool known = false;
      for (const auto& g : groups)
        for (const auto& w : g.weights) known = known || kv.first == "ratio@" + w;
      if (!known) throw std::runtime_error("prune-channels: '" + kv.first.substr(6) + "' is not the weight of a prunable layer");
    }
  auto group_ratio = [&](const channels::Group& g) {
    double r = ratio;
    std::string from;
    for (const auto& w : g.weights) {
      if (!o.has("ratio@" + w)) continue;
      const double v = o.get_double("ratio@" + w, ratio);
      if (!from.empty() && v != r)
        throw std::runtime_error("prune-channels: ratio@" + from + " and ratio@" + w +
                                 " differ, but the two layers feed one Add and lose the same channels");
      if (v < 0 || v >= 1) throw std::runtime_error("prune-channels: ratio@" + w + " must be in [0, 1)");
      r = v;
      from = w;
    }
    return r;
  };
  // Original output indices of each layer's current output rows (a consumer that was a
  // producer earlier has lost some; its re-fit target is the original's kept rows).
  std::vector<std::vector<int64_t>> out_rows(m.graph.nodes.size());

  std::mt19937_64 rng(ctx.seed);
  char line[400];
  std::snprintf(line, sizeof line, "prune-channels (ratio %g, %lld calibration images, %zu prunable channel group(s)):\n",
                ratio, (long long)data.count, groups.size());
  ctx.report << line;
  std::string per_layer;
  for (const auto& g : groups) {
    const double r = group_ratio(g);
    const int64_t remove = std::min(g.channels - min_channels, int64_t(std::llround(r * double(g.channels))));
    std::string name;
    for (const auto& w : g.weights) name += (name.empty() ? "" : "+") + w;
    if (remove <= 0) {
      std::snprintf(line, sizeof line, "  %-24s %4lld channels kept\n", name.c_str(), (long long)g.channels);
      ctx.report << line;
      continue;
    }
    // Per consumer: sampled rows of its input in the current model and its target output
    // (the original consumer's, before the bias, on the original's input).
    struct Rows {
      std::vector<channels::Position> pos;
      std::vector<float> x, y;
      int64_t rows = 0, outputs = 0, kh = 1, kw = 1;
      bool intercept = false;
    };
    std::vector<Rows> rs(g.consumers.size());
    std::vector<channels::LsProblem> problems;
    {
      Forward cur(m, data);
      for (size_t k = 0; k < g.consumers.size(); ++k) {
        const channels::Consumer& c = g.consumers[k];
        const ir::Node& cons = m.graph.nodes[size_t(c.node)];
        Rows& q = rs[k];
        const int x_t = cons.inputs[0];
        std::vector<int64_t> ws = cur.shape(cons.inputs[1]);
        q.kh = ws.size() == 4 ? ws[2] : 1;
        q.kw = ws.size() == 4 ? ws[3] : 1;
        q.pos = channels::sample_positions(cons, cur.tg.value(x_t), q.kh, q.kw, rows_wanted, rng);
        q.x = channels::input_rows(cons, cur.tg.value(x_t), q.kh, q.kw, q.pos, &q.rows);
        const std::vector<float> xo =
            channels::input_rows(original.graph.nodes[size_t(c.node)], f0.tg.value(x_t), q.kh, q.kw, q.pos, &q.rows);
        int64_t outputs0 = 0;
        const std::vector<float> w0 = channels::consumer_matrix(original, c, g.channels, &outputs0);
        std::vector<int64_t>& now = out_rows[size_t(c.node)];
        if (now.empty())
          for (int64_t j = 0; j < outputs0; ++j) now.push_back(j);
        q.outputs = int64_t(now.size());
        const int64_t cols = g.channels * c.group;
        q.y.assign(size_t(q.rows * q.outputs), 0.f);
        for (int64_t i = 0; i < q.rows; ++i)
          for (int64_t j = 0; j < q.outputs; ++j) {
            const float* wr = &w0[size_t(now[size_t(j)] * cols)];
            const float* xr = &xo[size_t(i * cols)];
            double sum = 0;
            for (int64_t e = 0; e < cols; ++e) sum += double(xr[e]) * wr[e];
            q.y[size_t(i * q.outputs + j)] = float(sum);
          }
        q.intercept = intercept && fo.refit && channels::consumer_can_have_bias(m, c, g.channels);
        problems.push_back({&q.x, &q.y, q.rows, c.group, q.outputs, q.intercept});
      }
    }
    const std::vector<int64_t> keep = channels::select_joint(problems, g.channels, remove, fo.ridge);
    const int64_t kept = int64_t(keep.size());
    channels::shrink_group(m, g, keep);
    for (int pn : g.producers) {
      std::vector<int64_t>& now = out_rows[size_t(pn)];
      if (now.empty())
        for (int64_t j = 0; j < g.channels; ++j) now.push_back(j);
      std::vector<int64_t> next;
      for (int64_t j : keep) next.push_back(now[size_t(j)]);
      now = next;
    }
    std::snprintf(line, sizeof line, "  %-24s %4lld -> %4lld channels\n", name.c_str(), (long long)g.channels,
                  (long long)kept);
    ctx.report << line;
    // Re-fit the consumers in graph order. The first sees exactly the kept columns of the
    // rows it was selected on; each later one may read what an earlier re-fit changed
    // (the pointwise Conv inside a residual block feeds the Add the next block reads), so
    // its rows come from a fresh forward pass.
    for (size_t k = 0; k < g.consumers.size(); ++k) {
      const channels::Consumer& c = g.consumers[k];
      Rows& q = rs[k];
      if (std::find(g.producers.begin(), g.producers.end(), c.node) != g.producers.end()) {
        std::vector<float> y(size_t(q.rows * kept));  // its own outputs were cut too
        for (int64_t i = 0; i < q.rows; ++i)
          for (int64_t j = 0; j < kept; ++j) y[size_t(i * kept + j)] = q.y[size_t(i * q.outputs + keep[size_t(j)])];
        q.y = std::move(y);
        q.outputs = kept;
      }
      std::vector<float> x(size_t(q.rows * kept * c.group));
      if (k == 0) {
        const int64_t cols = g.channels * c.group, kc = kept * c.group;
        for (int64_t i = 0; i < q.rows; ++i)
          for (int64_t j = 0; j < kept; ++j)
            std::copy_n(&q.x[size_t(i * cols + keep[size_t(j)] * c.group)], c.group, &x[size_t(i * kc + j * c.group)]);
      } else {
        Forward now(m, data);
        const ir::Node& cons = m.graph.nodes[size_t(c.node)];
        int64_t rows = 0;
        x = channels::input_rows(cons, now.tg.value(cons.inputs[0]), q.kh, q.kw, q.pos, &rows);
      }
      int64_t outputs = 0;
      const std::vector<float> w = channels::consumer_matrix(m, c, kept, &outputs);
      if (outputs != q.outputs)
        throw std::runtime_error("prune-channels: " + m.graph.nodes[size_t(c.node)].describe() +
                                 ": consumer's outputs changed before its turn");
      fo.remove = 0;
      fo.intercept = q.intercept;
      channels::FitResult fit = channels::select_and_refit(x, q.y, w, q.rows, kept, c.group, outputs, fo);
      channels::set_consumer_matrix(m, c, fit.weight, outputs, kept);
      if (fo.intercept) {
        std::vector<float> bias = channels::consumer_bias(m, c, outputs);
        for (int64_t j = 0; j < outputs; ++j) bias[size_t(j)] += fit.bias_delta[size_t(j)];
        channels::set_consumer_bias(m, c, bias);
      }
      const ir::Node& cons = m.graph.nodes[size_t(c.node)];
      std::snprintf(line, sizeof line, "    consumer %-22s rel. error %.2e -> %.2e (%lld rows)\n", cons.name.c_str(),
                    fit.rel_err_before, fit.rel_err_after, (long long)q.rows);
      ctx.report << line;
    }
    per_layer += ",\"ratio@" + json_escape(g.weights[0]) + "\":" + std::to_string(r);
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
