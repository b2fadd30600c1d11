// distill: fine-tunes a compressed model so its outputs match the original (teacher) on
// unlabeled images: soft-target KL loss at temperature T (Hinton et al.), plus
// cross-entropy when labels are given. Trained: surviving weights and biases of Gemm /
// MatMul / Conv, and codebook centroids. Held fixed: the pruning mask (weights that are
// zero, or outside a sparse structure) and each weight's codebook assignment, so the
// model keeps exactly its compressed structure and size. Quantized tensors train too:
// int8 levels (per-channel scales fixed) through a float shadow copy rounded back to its
// level every step (straight-through: the gradient of the rounded value updates the
// shadow), a codebook with per-channel scales through its centroids. Adam, mini-batches,
// deterministic for a seed.
//
// Options: images=IDX (required)  labels=IDX  teacher=MODEL (default: the input model)
//   mean=0.2860 std=0.3530 raw_shape=1x28x28 (raw float32 images)  epochs=1 batch=64
//   lr=0.001 lr_end=<lr> (cosine decay) temperature=4 ce_weight=0.5 limit=N (first N images)
//   sparsity=S prune_every=50 prune_end=0.7 (gradual magnitude pruning while training)
//   allocate=global|sensitivity probe=1024 max_cost=C (one threshold over all layers, or
//   per-layer sparsities chosen from each layer's measured cost on `probe` training images,
//   stopping where the predicted cost reaches C)
//   block=csr|1x4|4x1|1x8|auto block_tolerance=1.5 block@<tensor>= (what that pruning
//   zeroes together, as prune's option of the same name)  min_size=N min_cols=N (weights
//   with fewer elements, or a fan-in below N, are trained but not pruned, as prune's)
//   eval_images=IDX eval_labels=IDX (accuracy before/after)  plugin_path=DIR  progress=0|1
//   mix=P shift=S (augmented transfer set: each image of a batch is, with probability P,
//   blended with another training image, x = l a + (1 - l) b with l uniform in [0, 1],
//   and moved by up to S pixels; the teacher labels what the student sees, so no labels
//   are needed. Agreement for min_agreement counts the unblended images only.)
#include "../compress_common/block_prune.h"
#include "../compress_common/encode.h"
#include "../compress_common/evaluate.h"
#include "../compress_common/ir_util.h"
#include "../compress_common/sparsity_allocation.h"
#include "../compress_common/train_graph.h"
#include "../compress_common/transform_plugin.h"

#include <minnow/model_builder.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <stdexcept>

namespace minnow {
namespace compress {
namespace {

// One trainable tensor: its free variables and how they map onto the elements.
struct ParamState {
  int tensor = -1;
  bool codebook = false;
  bool is_weight = false;             // a weight matrix (weight_tensors), not a bias
  std::vector<float> centroids;       // codebook: the trained values
  std::vector<int32_t> assign;        // per element: centroid, or -1 = fixed
  std::vector<uint8_t> free;          // plain / levels: 1 = trained element
  std::vector<float> m, v;            // Adam moments per free variable
  // Quantized tensors: each element's scale (QuantParams along its axis), 1 without.
  std::vector<float> scale;
  bool levels = false;                // int8 levels: `shadow` trained, rounded to levels
  std::vector<float> shadow;
  int qmax = 127;
};

// Per element: its QuantParams scale (per tensor or along quant.axis); empty when the
// quantization is not one this training handles (zero points, a mismatched axis).
std::vector<float> element_scales(const ir::TensorInfo& info, const std::vector<int64_t>& shape, size_t n) {
  const ir::QuantParams& q = info.quant;
  for (int64_t z : q.zero_point)
    if (z != 0) return {};
  if (q.scale.empty()) return {};
  std::vector<float> s(n, q.scale[0]);
  if (q.scale.size() == 1) return s;
  if (q.axis < 0 || size_t(q.axis) >= shape.size() || shape[size_t(q.axis)] != int64_t(q.scale.size())) return {};
  int64_t inner = 1;
  for (size_t k = size_t(q.axis) + 1; k < shape.size(); ++k) inner *= shape[k];
  for (size_t k = 0; k < n; ++k) s[k] = q.scale[size_t((int64_t(k) / inner) % int64_t(q.scale.size()))];
  return s;
}

// The stage holding a tensor's int8 levels ([Dense int8] or [Sparse, Dense int8]).
const ir::DenseStage* int8_levels(const ir::TensorInfo& info) {
  if (info.encodings.empty()) return nullptr;
  const auto* d = std::get_if<ir::DenseStage>(&info.encodings.back());
  return d && d->element_type == DataType::kInt8 ? d : nullptr;
}

void adam(float& x, float g, float& m, float& v, float lr, int64_t t) {
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  m = b1 * m + (1 - b1) * g;
  v = b2 * v + (1 - b2) * g * g;
  float mh = m / (1 - std::pow(b1, float(t))), vh = v / (1 - std::pow(b2, float(t)));
  x -= lr * mh / (std::sqrt(vh) + eps);
}

ParamState make_state(const ir::ModelIR& m, TrainGraph& tg, int t, bool is_weight) {
  ParamState s;
  s.tensor = t;
  s.is_weight = is_weight;
  const auto& info = m.graph.tensors[size_t(t)];
  const Value& w = tg.param(t);
  const ir::CodebookStage* cb = nullptr;
  for (const auto& st : info.encodings)
    if (auto* c = std::get_if<ir::CodebookStage>(&st)) cb = c;
  Layout layout = layout_of(m, t);
  std::vector<uint8_t> stored(w.data.size(), layout.sparse ? 0 : 1);
  for (int64_t sl : layout.slots) stored[size_t(sl)] = 1;
  if (!info.quant.empty()) {
    s.scale = element_scales(info, w.shape, w.data.size());
    const bool scaled_codebook = cb && !s.scale.empty();
    const bool int8 = !cb && int8_levels(info) && !s.scale.empty() && info.quant.bits <= 8;
    if (!scaled_codebook && !int8) {  // a quantization this training does not handle: kept
      s.free.assign(w.data.size(), 0);
      s.scale.clear();
      return s;
    }
    if (int8) {  // levels: a shadow copy trained, each step rounded back to a level
      s.levels = true;
      s.qmax = (1 << (std::max(2, info.quant.bits) - 1)) - 1;
      s.shadow = w.data;
      s.free.resize(w.data.size());
      for (size_t k = 0; k < w.data.size(); ++k) s.free[k] = stored[k] && (!is_weight || w.data[k] != 0.f);
      s.m.assign(w.data.size(), 0.f);
      s.v.assign(w.data.size(), 0.f);
      return s;
    }
  }
  if (cb) {
    s.codebook = true;
    s.centroids = cb->centroids;
    if (s.scale.empty()) s.scale.assign(w.data.size(), 1.f);
    s.assign.assign(w.data.size(), -1);
    for (size_t k = 0; k < w.data.size(); ++k) {
      if (!stored[k]) continue;
      // The decoded value is scale * centroid (as the loader computes it, in float).
      for (size_t c = 0; c < s.centroids.size(); ++c)
        if (s.scale[k] * s.centroids[c] == w.data[k]) { s.assign[k] = int32_t(c); break; }
    }
    s.m.assign(s.centroids.size(), 0.f);
    s.v.assign(s.centroids.size(), 0.f);
    return s;
  }
  s.free.resize(w.data.size());
  for (size_t k = 0; k < w.data.size(); ++k) s.free[k] = stored[k] && (!is_weight || w.data[k] != 0.f);
  s.m.assign(w.data.size(), 0.f);
  s.v.assign(w.data.size(), 0.f);
  return s;
}

// KL(p || q) of the softmaxes of teacher logits `zt` and student logits `zs` (T = 1).
double kl_divergence(const float* zt, const float* zs, int64_t classes) {
  const double mt = *std::max_element(zt, zt + classes), ms = *std::max_element(zs, zs + classes);
  double st = 0, ss = 0;
  for (int64_t c = 0; c < classes; ++c) {
    st += std::exp(zt[c] - mt);
    ss += std::exp(zs[c] - ms);
  }
  double kl = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const double lp = zt[c] - mt - std::log(st), lq = zs[c] - ms - std::log(ss);
    kl += std::exp(lp) * (lp - lq);
  }
  return kl;
}

void step(ParamState& s, TrainGraph& tg, float lr, int64_t t) {
  Value& w = tg.param(s.tensor);
  const Value& g = tg.param_grad(s.tensor);
  if (s.codebook) {
    std::vector<double> gc(s.centroids.size(), 0.0);
    for (size_t k = 0; k < w.data.size(); ++k)
      if (s.assign[k] >= 0) gc[size_t(s.assign[k])] += double(g.data[k]) * s.scale[k];
    for (size_t c = 0; c < s.centroids.size(); ++c)
      if (s.centroids[c] != 0.f)  // a zero centroid holds pruned weights: stays zero
        adam(s.centroids[c], float(gc[c]), s.m[c], s.v[c], lr, t);
    for (size_t k = 0; k < w.data.size(); ++k)
      if (s.assign[k] >= 0) w.data[k] = s.scale[k] * s.centroids[size_t(s.assign[k])];
    return;
  }
  if (s.levels) {
    for (size_t k = 0; k < w.data.size(); ++k) {
      if (!s.free[k]) continue;
      adam(s.shadow[k], g.data[k], s.m[k], s.v[k], lr, t);
      const float q = std::max(-float(s.qmax), std::min(float(s.qmax), std::nearbyint(s.shadow[k] / s.scale[k])));
      w.data[k] = q * s.scale[k];
    }
    return;
  }
  for (size_t k = 0; k < w.data.size(); ++k)
    if (s.free[k]) adam(w.data[k], g.data[k], s.m[k], s.v[k], lr, t);
}

// Writes the trained values back without changing the tensor's structure.
void write_back(ir::ModelIR& m, const ParamState& s, const Value& w) {
  auto& info = m.graph.tensors[size_t(s.tensor)];
  if (s.levels) {  // the levels the trained values round to, in the stage's slot order
    Layout layout = layout_of(m, s.tensor);
    std::vector<int8_t> q;
    for (int64_t sl : layout.slots) q.push_back(int8_t(std::nearbyint(w.data[size_t(sl)] / s.scale[size_t(sl)])));
    const uint32_t b = add_buffer(m, q.data(), q.size());
    std::get<ir::DenseStage>(info.encodings.back()).buffer = b;
    return;
  }
  if (!info.quant.empty() && !s.codebook) return;
  if (s.codebook) {
    for (auto& st : info.encodings)
      if (auto* c = std::get_if<ir::CodebookStage>(&st)) {
        c->centroids = s.centroids;
        for (float& v : c->centroids) v = short_float(v);  // as quantize stores them
      }
    return;
  }
  Layout layout = layout_of(m, s.tensor);
  std::vector<float> vals;
  for (int64_t sl : layout.slots) vals.push_back(w.data[size_t(sl)]);
  store_values(m, s.tensor, layout, vals);
}

std::shared_ptr<const Model> model_of(const ir::ModelIR& m) {
  auto bytes = serialize_model(m);
  if (!bytes) throw std::runtime_error(bytes.status().message());
  auto model = Model::load_bytes(std::move(bytes.value()), "<distill>");
  if (!model) throw std::runtime_error(model.status().message());
  return model.value();
}

void distill(TransformContext& ctx) {
  ir::ModelIR& m = ctx.model;
  const Options& o = ctx.options;
  const std::string images = o.get_string("images", "");
  if (images.empty()) throw std::runtime_error("distill: option images=<idx file> is required (unlabeled training images)");
  const std::string labels_path = o.get_string("labels", "");
  const std::string teacher_path = o.get_string("teacher", "");
  const float mean = float(o.get_double("mean", 0.2860)), stdv = float(o.get_double("std", 0.3530));
  const std::string raw_shape = o.get_string("raw_shape", "");
  const int epochs = int(o.get_int("epochs", 1));
  const int64_t batch = o.get_int("batch", 64);
  const float lr = float(o.get_double("lr", 1e-3));
  const float T = float(o.get_double("temperature", 4.0));
  const float ce_weight = float(o.get_double("ce_weight", 0.5));
  const int64_t limit = o.get_int("limit", -1);
  const std::string eval_images = o.get_string("eval_images", ""), eval_labels = o.get_string("eval_labels", "");
  const std::string plugin_path = o.get_string("plugin_path", "");
  const bool progress = o.get_bool("progress", false);
  const double mix = o.get_double("mix", 0.0);
  const int64_t shift = o.get_int("shift", 0);
  if (mix < 0 || mix > 1 || shift < 0 || shift > 8) throw std::runtime_error("distill: mix in [0, 1], shift in 0..8");
  const bool augment = mix > 0 || shift > 0;
  // sparsity=S: gradual magnitude pruning during training (Zhu & Gupta 2017): every
  // prune_every steps one global threshold over the plain weight matrices raises their
  // sparsity along s_t = S + (s_0 - S) (1 - t / t_end)^3, reaching S at prune_end of the
  // steps; the remaining steps fine-tune with the mask fixed. 0 = masks stay as they are.
  const double target_sparsity = o.get_double("sparsity", 0.0);
  const int64_t prune_every = o.get_int("prune_every", 50);
  const double prune_end = o.get_double("prune_end", 0.7);
  // lr_end: cosine decay of the learning rate from lr to lr_end over the steps.
  const float lr_end = float(o.get_double("lr_end", o.get_double("lr", 1e-3)));
  // min_agreement=A: the sparsity stops rising (for good) once the student's recent
  // agreement with the teacher (top-1 on the training batches, averaged over about the
  // last 4 * prune_every steps) falls below A; the rest of the steps fine-tune at the
  // sparsity reached. 0 = off: prune to `sparsity` whatever it costs.
  const double min_agreement = o.get_double("min_agreement", 0.0);
  const int64_t min_size = o.get_int("min_size", 0), min_cols = o.get_int("min_cols", 0);
  if (min_agreement < 0 || min_agreement > 1) throw std::runtime_error("distill: min_agreement in [0, 1]");
  if (target_sparsity < 0 || target_sparsity >= 1 || prune_every < 1 || prune_end <= 0 || prune_end > 1 || lr_end <= 0)
    throw std::runtime_error("distill: sparsity in [0, 1), prune_every >= 1, prune_end in (0, 1], lr_end > 0");
  if (epochs < 0 || batch < 1 || lr <= 0 || T <= 0) throw std::runtime_error("distill: epochs >= 0, batch >= 1, lr > 0, temperature > 0");
  // allocate= / probe= / max_cost= (per-layer sparsity, below): checked here, before the
  // teacher's pass over the training images, like the other options.
  const std::string allocate = o.get_string("allocate", "global");
  if (allocate != "global" && allocate != "sensitivity")
    throw std::runtime_error("distill: allocate must be global or sensitivity, not '" + allocate + "'");
  const int64_t probe_count = o.get_int("probe", 1024);
  if (probe_count < 1) throw std::runtime_error("distill: probe must be >= 1");
  // max_cost=C: the allocation stops short of `sparsity` where its predicted cost (the
  // summed one-shot KL of its layers) reaches C: how much the model can lose is measured
  // per model, not assumed. Negative (the default): no limit.
  const double max_cost = o.get_double("max_cost", -1);

  Images data = load_images(images, mean, stdv, raw_shape);
  if (limit >= 0) data.count = std::min(data.count, limit);
  std::vector<int32_t> labels;
  if (!labels_path.empty()) labels = load_labels(labels_path);
  if (!labels.empty() && int64_t(labels.size()) < data.count) throw std::runtime_error("distill: fewer labels than images");

  // Teacher logits for every training image, once (through the engine's kernels).
  std::shared_ptr<const Model> teacher;
  if (!teacher_path.empty()) {
    auto t = Model::load_file(teacher_path);
    if (!t) throw std::runtime_error(t.status().message());
    teacher = t.value();
  } else {
    teacher = model_of(m);
  }
  int64_t classes = 0;
  std::vector<float> tlogits;
  // With augmentation the teacher labels every batch as the student sees it; else its
  // logits for every training image, once (through the engine's kernels).
  std::unique_ptr<Runner> teacher_run;
  if (augment) {
    teacher_run = std::make_unique<Runner>(teacher, plugin_path);
    teacher_run->logits(data, 0, std::min<int64_t>(1, data.count), &classes);  // the class count
  } else {
    Runner r(teacher, plugin_path);
    tlogits = r.logits(data, 0, data.count, &classes);
  }
  // Image geometry for shifts: the last two sample dimensions are height and width; the
  // background is the preprocessed value of pixel 0.
  const int64_t img_w = data.sample_shape.empty() ? 1 : data.sample_shape.back();
  const int64_t img_h = data.sample_shape.size() < 2 ? 1 : data.sample_shape[data.sample_shape.size() - 2];
  const float background = -mean / stdv;
  Images batch_images;
  batch_images.sample_shape = data.sample_shape;
  std::vector<uint8_t> blended;
  Images ev;
  std::vector<int32_t> ev_labels;
  if (!eval_images.empty()) {
    if (eval_labels.empty()) throw std::runtime_error("distill: eval_images needs eval_labels");
    ev = load_images(eval_images, mean, stdv, raw_shape);
    ev_labels = load_labels(eval_labels);
    Runner r(model_of(m), plugin_path);
    ctx.metric = "accuracy";
    ctx.metric_before = float(accuracy(r, ev, ev_labels));
  }

  TrainGraph tg(m);
  std::vector<ParamState> states;
  const std::vector<WeightRef> weights = weight_tensors(m);
  for (int t : tg.params()) {
    bool is_weight = false;  // a weight matrix (pruned, masked), not a bias: also LSTM's R
    for (const WeightRef& r : weights) is_weight = is_weight || r.tensor == t;
    states.push_back(make_state(m, tg, t, is_weight));
  }
  // The weights that in-training pruning works on: plain (not codebook, not quantized).
  std::vector<size_t> prunable;
  for (size_t i = 0; i < states.size(); ++i)
    if (target_sparsity > 0 && !states[i].codebook && states[i].is_weight && !states[i].free.empty() &&
        m.graph.tensors[size_t(states[i].tensor)].quant.empty()) {
      const Value& w = tg.param(states[i].tensor);
      int64_t outputs = 1;
      for (const WeightRef& r : weights)
        if (r.tensor == states[i].tensor && size_t(r.out_axis) < w.shape.size()) outputs = std::max<int64_t>(1, w.shape[size_t(r.out_axis)]);
      if (w.size() < min_size || w.size() / outputs < min_cols) continue;  // small or narrow: not pruned
      prunable.push_back(i);
    }
  int64_t prunable_total = 0, zeros0 = 0;
  for (size_t i : prunable) {
    const Value& w = tg.param(states[i].tensor);
    prunable_total += w.size();
    for (float v : w.data) zeros0 += v == 0.f;
  }
  const double s0 = prunable_total ? double(zeros0) / double(prunable_total) : 0;
  const int64_t total_steps = int64_t(epochs) * ((data.count + batch - 1) / batch);
  const int64_t t_end = std::max<int64_t>(1, int64_t(prune_end * double(total_steps)));
  // Block shape of each prunable weight (block=, as prune's): chosen once, before
  // training, from the weights as they come in.
  const std::string block = o.get_string("block", "csr");
  const double tolerance = o.get_double("block_tolerance", kDefaultBlockTolerance);
  if (tolerance < 1) throw std::runtime_error("distill: block_tolerance must be >= 1");
  if (block != "auto") parse_block_shape(block, "distill: block");
  std::vector<BlockPruneItem> block_items;
  bool blocked = false;
  {
    const std::vector<WeightRef> refs = weight_tensors(m);
    for (size_t i : prunable) {
      const int t = states[i].tensor;
      const WeightRef* ref = nullptr;
      for (const WeightRef& r : refs)
        if (r.tensor == t) ref = &r;
      Value& w = tg.param(t);
      BlockPruneItem it;
      it.data = w.data.data();
      it.free = states[i].free.data();
      if (ref) {
        it.view = matrix_view(*ref, m.graph.tensors[size_t(t)].static_shape());
        const std::string b = o.get_string("block@" + ref->name, block);
        it.shape = b == "auto" ? choose_block_shape(it.data, it.view, kernel_kind(m, *ref), target_sparsity,
                                                    tolerance, nullptr)
                               : parse_block_shape(b, "distill: block@" + ref->name);
        if (!block_fits(it.shape, it.view)) it.shape = {1, 1};
      } else {  // not a matrix the kernels see: unstructured over its elements
        it.view.rows = 1;
        it.view.cols = int64_t(w.data.size());
      }
      if (it.view.rows * it.view.cols != int64_t(w.data.size())) {
        it.view.rows = 1;
        it.view.cols = int64_t(w.data.size());
        it.shape = {1, 1};
      }
      blocked = blocked || it.shape != BlockShape{1, 1};
      block_items.push_back(it);
    }
  }
  // Zeroes the smallest magnitudes of the weights in `which` (indices into `prunable`),
  // one ranking over them all, until `sparsity` of them are zero; or their weakest blocks.
  auto magnitude_prune = [&](const std::vector<size_t>& which, double sparsity) {
    if (blocked) {
      std::vector<BlockPruneItem> items;
      for (size_t j : which) items.push_back(block_items[j]);
      prune_blocks_group(items, sparsity);
      return;
    }
    int64_t total = 0;
    for (size_t j : which) total += tg.param(states[prunable[j]].tensor).size();
    const int64_t k = int64_t(std::llround(sparsity * double(total)));
    if (k <= 0) return;
    std::vector<float> mags;
    mags.reserve(size_t(total));
    for (size_t j : which)
      for (float v : tg.param(states[prunable[j]].tensor).data) mags.push_back(std::fabs(v));
    std::nth_element(mags.begin(), mags.begin() + (k - 1), mags.end());
    const float thr = mags[size_t(k - 1)];
    for (size_t j : which) {
      Value& w = tg.param(states[prunable[j]].tensor);
      for (size_t e = 0; e < w.data.size(); ++e)
        if (std::fabs(w.data[e]) <= thr) {
          w.data[e] = 0.f;
          states[prunable[j]].free[e] = 0;
        }
    }
  };
  std::vector<size_t> every(prunable.size());
  std::iota(every.begin(), every.end(), size_t(0));
  auto prune_to = [&](double sparsity) { magnitude_prune(every, sparsity); };  // one global threshold
  const int64_t per = data.sample_size();
  // allocate=global: one magnitude threshold over every prunable weight, so each layer's
  // sparsity follows from its weights' magnitudes. allocate=sensitivity: each layer gets
  // its own sparsity, chosen before training from what pruning that layer alone costs
  // (the teacher-student KL at T = 1 on `probe` training images, at 14 levels), at the
  // least summed cost for the same total (sparsity_allocation.h); during training every
  // layer then follows the schedule towards its own level by magnitude within the layer.
  // Magnitudes do not compare across layers: a convolution's weight acts at every
  // position, a classifier's weight on every decision.
  const bool per_layer = allocate == "sensitivity" && target_sparsity > 0 && !prunable.empty();
  std::vector<double> layer_start(prunable.size(), 0), layer_target(prunable.size(), 0);
  for (size_t j = 0; j < prunable.size(); ++j) {
    const Value& w = tg.param(states[prunable[j]].tensor);
    int64_t z = 0;
    for (float v : w.data) z += v == 0.f;
    layer_start[j] = w.size() ? double(z) / double(w.size()) : 0;
  }
  auto prune_layer = [&](size_t j, double sparsity) { magnitude_prune({j}, sparsity); };  // layer j alone
  if (per_layer) {
    std::vector<int64_t> pick(size_t(data.count));
    std::iota(pick.begin(), pick.end(), 0);
    std::mt19937_64 probe_rng(ctx.seed ^ 0x5eed5eedULL);
    std::shuffle(pick.begin(), pick.end(), probe_rng);
    const int64_t np = std::min(probe_count, data.count);
    Images probe;
    probe.sample_shape = data.sample_shape;
    probe.count = np;
    probe.data.resize(size_t(np * per));
    for (int64_t i = 0; i < np; ++i)
      std::copy(data.data.begin() + pick[size_t(i)] * per, data.data.begin() + (pick[size_t(i)] + 1) * per,
                probe.data.begin() + i * per);
    std::vector<float> probe_teacher;
    if (augment) {
      int64_t c2 = 0;
      probe_teacher = teacher_run->logits(probe, 0, np, &c2);
    } else {
      for (int64_t i = 0; i < np; ++i)
        probe_teacher.insert(probe_teacher.end(), tlogits.begin() + pick[size_t(i)] * classes,
                             tlogits.begin() + (pick[size_t(i)] + 1) * classes);
    }
    auto probe_kl = [&]() {  // mean KL(teacher || student) at T = 1 over the probe images
      double kl = 0;
      const int64_t chunk = 256;
      for (int64_t b0 = 0; b0 < np; b0 += chunk) {
        const int64_t n = std::min(chunk, np - b0);
        std::vector<float> x(probe.data.begin() + b0 * per, probe.data.begin() + (b0 + n) * per);
        const Value& z = tg.forward(x, n);
        if (z.size() != n * classes) throw std::runtime_error("distill: student and teacher outputs differ in shape");
        for (int64_t i = 0; i < n; ++i)
          kl += kl_divergence(&probe_teacher[size_t((b0 + i) * classes)], &z.data[size_t(i * classes)], classes);
      }
      return kl / double(np);
    };
    static const double kLevels[] = {0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98};
    const double base = probe_kl();
    std::vector<SensitivityCurve> curves(prunable.size());
    for (size_t j = 0; j < prunable.size(); ++j) {
      Value& w = tg.param(states[prunable[j]].tensor);
      std::vector<uint8_t>& fr = states[prunable[j]].free;
      const std::vector<float> keep_w = w.data;
      const std::vector<uint8_t> keep_f = fr;
      curves[j].size = w.size();
      curves[j].start = layer_start[j];
      for (double lv : kLevels) {
        if (lv <= layer_start[j] + 1e-9) continue;
        prune_layer(j, lv);
        curves[j].levels.push_back(lv);
        curves[j].cost.push_back(probe_kl() - base);
        std::copy(keep_w.begin(), keep_w.end(), w.data.begin());  // in place: block items point into it
        std::copy(keep_f.begin(), keep_f.end(), fr.begin());
      }
    }
    double predicted = 0;
    layer_target = allocate_sparsity(curves, target_sparsity, max_cost, &predicted);
    char line0[256];
    {
      std::string path;
      for (double at : {0.8, 0.85, 0.9, 0.92, 0.94, 0.96}) {
        double c = 0;
        allocate_sparsity(curves, at, -1, &c);
        std::snprintf(line0, sizeof line0, "%s%.0f%% %.3f", path.empty() ? "" : ", ", 100 * at, c);
        path += line0;
      }
      double overall = 0;
      for (size_t j = 0; j < prunable.size(); ++j) overall += layer_target[j] * double(curves[j].size);
      overall /= double(prunable_total);
      std::snprintf(line0, sizeof line0, "  allocation: %.2f%% overall, predicted cost %.3f (summed one-shot KL; %s)\n",
                    100 * overall, predicted, path.c_str());
      ctx.report << line0;
    }
    ctx.report << "  sparsity by sensitivity (" << np << " probe images; KL at T = 1 when pruned alone to 50 / 90 / 98 %):\n";
    for (size_t j = 0; j < prunable.size(); ++j) {
      auto cost_at = [&](double lv) {
        for (size_t k = 0; k < curves[j].levels.size(); ++k)
          if (std::fabs(curves[j].levels[k] - lv) < 1e-9) return curves[j].cost[k];
        return 0.0;
      };
      std::snprintf(line0, sizeof line0, "    %-28s %8lld weights -> %6.2f%%   (%.4f / %.4f / %.4f)\n",
                    m.graph.tensors[size_t(states[prunable[j]].tensor)].name.c_str(), (long long)curves[j].size,
                    100 * layer_target[j], cost_at(0.5), cost_at(0.9), cost_at(0.98));
      ctx.report << line0;
    }
  }
  // Prunes every layer to its point `p` in [0, 1] of the way from where it started to its
  // target (one global threshold, or each layer its own level); returns the sparsity over
  // all prunable weights.
  auto prune_progress = [&](double p) {
    if (!per_layer) {
      const double s = s0 + (target_sparsity - s0) * p;
      prune_to(s);
      return s;
    }
    double zeros = 0;
    for (size_t j = 0; j < prunable.size(); ++j) {
      const double s = layer_start[j] + (layer_target[j] - layer_start[j]) * p;
      prune_layer(j, s);
      zeros += s * double(tg.param(states[prunable[j]].tensor).size());
    }
    return zeros / double(prunable_total);
  };
  std::mt19937_64 rng(ctx.seed);
  std::vector<int64_t> order(size_t(data.count));
  std::iota(order.begin(), order.end(), 0);
  int64_t t_step = 0;
  double recent = 1.0;          // running agreement (EMA over ~4 * prune_every steps)
  double sparsity_now = s0;     // what prune_to last reached
  double held = -1;             // sparsity held at by min_agreement (-1: not held)
  double progress_now = 0;      // how far along the schedule prune_progress last went
  double next_trace = 0.1;      // report the schedule at every further 10 % of it
  const double ema = 1.0 / (4.0 * double(prune_every));
  auto start = std::chrono::steady_clock::now();
  char line[256];
  ctx.report << "distill: " << data.count << " images, " << epochs << " epoch(s), batch " << batch << ", lr " << lr
             << ", T " << T << (labels.empty() ? "" : ", with labels") << (teacher_path.empty() ? ", teacher = input model" : "")
             << "\n";
  for (int ep = 0; ep < epochs; ++ep) {
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    int64_t seen = 0, agree = 0, agree_before = 0, clean = 0, clean_before = 0;
    for (int64_t b0 = 0; b0 < data.count; b0 += batch) {
      const int64_t n = std::min(batch, data.count - b0);
      std::vector<float> x(size_t(n * per));
      for (int64_t i = 0; i < n; ++i)
        std::copy(data.data.begin() + order[size_t(b0 + i)] * per, data.data.begin() + (order[size_t(b0 + i)] + 1) * per,
                  x.begin() + i * per);
      std::vector<float> batch_teacher;
      if (augment) {
        blended.assign(size_t(n), 0);
        std::vector<float> moved(static_cast<size_t>(per));
        for (int64_t i = 0; i < n; ++i) {
          float* xi = &x[size_t(i * per)];
          if (mix > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < mix) {
            const int64_t other = int64_t(rng() % uint64_t(data.count));
            const float l = float(std::uniform_real_distribution<double>(0, 1)(rng));
            const float* xo = &data.data[size_t(other * per)];
            for (int64_t k = 0; k < per; ++k) xi[k] = l * xi[k] + (1 - l) * xo[k];
            blended[size_t(i)] = 1;
          }
          if (shift > 0 && img_h * img_w > 1 && per % (img_h * img_w) == 0) {
            const int64_t dy = int64_t(rng() % uint64_t(2 * shift + 1)) - shift;
            const int64_t dx = int64_t(rng() % uint64_t(2 * shift + 1)) - shift;
            for (int64_t p0 = 0; p0 < per; p0 += img_h * img_w)
              for (int64_t yy = 0; yy < img_h; ++yy)
                for (int64_t xx = 0; xx < img_w; ++xx) {
                  const int64_t sy = yy - dy, sx = xx - dx;
                  moved[size_t(p0 + yy * img_w + xx)] =
                      sy >= 0 && sy < img_h && sx >= 0 && sx < img_w ? xi[p0 + sy * img_w + sx] : background;
                }
            std::copy(moved.begin(), moved.end(), xi);
          }
        }
        batch_images.count = n;
        batch_images.data = x;
        int64_t c2 = 0;
        batch_teacher = teacher_run->logits(batch_images, 0, n, &c2);
        if (c2 != classes) throw std::runtime_error("distill: teacher outputs changed shape");
      }
      const Value& z = tg.forward(x, n);
      if (z.size() != n * classes) throw std::runtime_error("distill: student and teacher outputs differ in shape");
      std::vector<float> dz(size_t(n * classes));
      for (int64_t i = 0; i < n; ++i) {
        const float* zs = &z.data[size_t(i * classes)];
        const float* zt = augment ? &batch_teacher[size_t(i * classes)] : &tlogits[size_t(order[size_t(b0 + i)] * classes)];
        const size_t nc = static_cast<size_t>(classes);
        std::vector<double> p(nc), q(nc), q1(nc);
        double mp = *std::max_element(zt, zt + classes), mq = *std::max_element(zs, zs + classes), sp = 0, sq = 0, s1 = 0;
        for (int64_t c = 0; c < classes; ++c) {
          sp += p[size_t(c)] = std::exp((zt[c] - mp) / T);
          sq += q[size_t(c)] = std::exp((zs[c] - mq) / T);
          s1 += q1[size_t(c)] = std::exp(zs[c] - mq);
        }
        double kl = 0;
        for (int64_t c = 0; c < classes; ++c) {
          p[size_t(c)] /= sp; q[size_t(c)] /= sq; q1[size_t(c)] /= s1;
          if (p[size_t(c)] > 0) kl += p[size_t(c)] * (std::log(p[size_t(c)]) - std::log(std::max(q[size_t(c)], 1e-30)));
          // d(T^2 KL)/dz = T (q - p); averaged over the batch.
          dz[size_t(i * classes + c)] = float(T * (q[size_t(c)] - p[size_t(c)]) / double(n));
        }
        loss_sum += double(T) * T * kl;
        if (!labels.empty()) {
          int32_t y = labels[size_t(order[size_t(b0 + i)])];
          loss_sum += ce_weight * -std::log(std::max(q1[size_t(y)], 1e-30));
          for (int64_t c = 0; c < classes; ++c)
            dz[size_t(i * classes + c)] += float(ce_weight * (q1[size_t(c)] - (c == y ? 1.0 : 0.0)) / double(n));
        }
        const bool same = (std::max_element(zs, zs + classes) - zs) == (std::max_element(zt, zt + classes) - zt);
        if (augment && blended[size_t(i)]) continue;  // agreement on unblended images only
        agree += same;
        ++clean;
      }
      if (clean > clean_before)
        recent += ema * (double(agree - agree_before) / double(clean - clean_before) - recent);
      agree_before = agree;
      clean_before = clean;
      tg.backward(dz);
      ++t_step;
      const double progress_frac = total_steps > 1 ? double(t_step - 1) / double(total_steps - 1) : 1.0;
      const float lr_t = lr_end + 0.5f * (lr - lr_end) * float(1 + std::cos(3.14159265358979 * progress_frac));
      for (auto& s : states) step(s, tg, lr_t, t_step);
      if (!prunable.empty() && held < 0 && (t_step % prune_every == 0 || t_step == t_end) && t_step <= t_end) {
        if (recent < min_agreement && t_step > 4 * prune_every) {
          held = sparsity_now;
          std::snprintf(line, sizeof line,
                        "  sparsity held at %.2f%% (step %lld): agreement %.4f below min_agreement %.4f\n",
                        100 * held, (long long)t_step, recent, min_agreement);
          ctx.report << line;
        } else {
          const double f = 1 - double(t_step) / double(t_end);
          progress_now = 1 - f * f * f;  // Zhu & Gupta's cubic schedule
          sparsity_now = prune_progress(progress_now);
          if (double(t_step) / double(t_end) >= next_trace - 1e-9) {
            std::snprintf(line, sizeof line, "  step %lld: sparsity %.2f%%, recent agreement %.4f\n", (long long)t_step,
                          100 * sparsity_now, recent);
            ctx.report << line;
            next_trace += 0.1;
          }
        }
      }
      seen += n;
      if (progress) {
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        int bar = int(30 * seen / data.count);
        std::fprintf(stderr, "\r  distill epoch %d/%d [%-30s] %5.1f%%  loss %.4f  agree %.3f  %.0fs ", ep + 1, epochs,
                     std::string(size_t(bar), '=').c_str(), 100.0 * seen / data.count, loss_sum / seen,
                     clean ? double(agree) / clean : 0.0, secs);
        std::fflush(stderr);
      }
    }
    if (progress) std::fprintf(stderr, "\n");
    std::snprintf(line, sizeof line, "  epoch %d: loss %.4f, agreement with teacher %.4f (during the epoch)\n", ep + 1,
                  seen ? loss_sum / seen : 0.0, clean ? double(agree) / clean : 0.0);
    ctx.report << line;
  }
  double reached = held >= 0 ? held : target_sparsity;
  if (!prunable.empty()) {
    // Exactly the target (or the held level), whatever the step count.
    reached = prune_progress(held >= 0 ? progress_now : 1.0);
    std::snprintf(line, sizeof line, "  pruned during training: %.2f%% -> %.2f%% of %lld weights%s\n", 100 * s0,
                  100 * reached, (long long)prunable_total, held >= 0 ? " (held by min_agreement)" : "");
    ctx.report << line;
  }
  int trained = 0;
  for (auto& s : states) {
    if (std::find(prunable.begin(), prunable.end(), size_t(&s - states.data())) != prunable.end()) {
      // The mask changed: store the smallest of dense / CSR / BSR.
      Tensor t(DataType::kFloat32, tg.param(s.tensor).shape);
      std::copy(tg.param(s.tensor).data.begin(), tg.param(s.tensor).data.end(), t.data<float>());
      store_smallest(m, s.tensor, t);
      ++trained;
      continue;
    }
    write_back(m, s, tg.param(s.tensor));
    trained += s.codebook || std::find(s.free.begin(), s.free.end(), uint8_t(1)) != s.free.end();
  }
  ctx.report << "  trained " << trained << " of " << states.size() << " weight/bias tensors (masks and codebook assignments fixed)\n";
  if (!ev.data.empty()) {
    Runner r(model_of(m), plugin_path);
    ctx.metric_after = float(accuracy(r, ev, ev_labels));
    std::snprintf(line, sizeof line, "  accuracy %.4f -> %.4f\n", ctx.metric_before, ctx.metric_after);
    ctx.report << line;
  }
  std::snprintf(line, sizeof line,
                "{\"epochs\":%d,\"batch\":%lld,\"lr\":%g,\"lr_end\":%g,\"sparsity\":%g,\"temperature\":%g,\"ce_weight\":%g,\"images\":%lld,\"labels\":%s,\"seed\":%llu}",
                epochs, (long long)batch, double(lr), double(lr_end), target_sparsity, double(T), double(ce_weight), (long long)data.count,
                labels.empty() ? "false" : "true", (unsigned long long)ctx.seed);
  ctx.parameters = line;
  if (min_size > 0 || min_cols > 0) {
    char a[96];
    std::snprintf(a, sizeof a, ",\"min_size\":%lld,\"min_cols\":%lld}", (long long)min_size, (long long)min_cols);
    ctx.parameters.pop_back();
    ctx.parameters += a;
  }
  if (augment) {
    char a[96];
    std::snprintf(a, sizeof a, ",\"mix\":%g,\"shift\":%lld}", mix, (long long)shift);
    ctx.parameters.pop_back();
    ctx.parameters += a;
  }
  if (min_agreement > 0) {  // the guard and what it did
    char g[128];
    std::snprintf(g, sizeof g, ",\"min_agreement\":%g,\"sparsity_reached\":%g}", min_agreement, prunable.empty() ? 0.0 : reached);
    ctx.parameters.pop_back();
    ctx.parameters += g;
  }
  if (per_layer) {  // what the allocation chose, as prune's sparsity@ would say it
    ctx.parameters.pop_back();
    ctx.parameters += ",\"allocate\":\"sensitivity\",\"probe\":" + std::to_string(probe_count);
    if (max_cost >= 0) {
      char c[48];
      std::snprintf(c, sizeof c, ",\"max_cost\":%g", max_cost);
      ctx.parameters += c;
    }
    for (size_t j = 0; j < prunable.size(); ++j) {
      char v[32];
      std::snprintf(v, sizeof v, "%.4g", layer_target[j]);
      ctx.parameters += ",\"sparsity@" + json_escape(m.graph.tensors[size_t(states[prunable[j]].tensor)].name) + "\":" + v;
    }
    ctx.parameters += "}";
  }
  if (blocked || block != "csr") {  // the shapes pruning used, as prune records them
    ctx.parameters.pop_back();
    ctx.parameters += ",\"block\":\"" + json_escape(block) + "\"";
    for (size_t j = 0; j < prunable.size(); ++j)
      ctx.parameters += ",\"block@" + json_escape(m.graph.tensors[size_t(states[prunable[j]].tensor)].name) +
                        "\":\"" + block_items[j].shape.str() + "\"";
    ctx.parameters += "}";
  }
}

}  // namespace
}  // namespace compress
}  // namespace minnow

MINNOW_DEFINE_TRANSFORM("distill", "0.1.0",
                        "distillation fine-tuning from the original model (masks and codebook assignments fixed)",
                        minnow::compress::distill)
