// prune: synapse pruning to a target sparsity, globally (one magnitude threshold over
// every weight matrix) or per layer, by magnitude |w|, unstructured or in blocks of the
// shapes cpu_sparse runs faster (block_prune.h). Weights already zero stay zero, so
// repeated calls (gradual pruning between fine-tuning steps) only grow the mask. The
// result is stored dense, CSR or BSR, whichever is smallest.
//
// Options: sparsity=0.9  scope=global|layer  sparsity@<tensor>=0.95 (per-tensor target,
//          such tensors are left out of the global threshold)  min_size=<elements>
//          (smaller weight tensors are not pruned; default 0)  min_cols=<fan-in> (weights
//          whose neurons sum over fewer inputs are not pruned; default 0)
//          block=csr|1x4|4x1|1x8|auto (R outputs x C inputs zeroed together, by the mean
//          square of the block; auto: per layer, the shape cpu_sparse's cost model predicts
//          fastest among those that remove at most block_tolerance (1.5) times the squared
//          magnitude unstructured pruning removes)  block@<tensor>=... per tensor
#include "../compress_common/block_prune.h"
#include "../compress_common/encode.h"
#include "../compress_common/ir_util.h"
#include "../compress_common/transform_plugin.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace minnow {
namespace compress {
namespace {

// Zeroes the `target` fraction of smallest-|w| entries of each group together.
// Ties are broken by position so the result is deterministic.
void prune_group(std::vector<Tensor*>& ws, double target) {
  size_t total = 0;
  for (Tensor* w : ws) total += size_t(w->elements());
  size_t k = size_t(std::llround(target * double(total)));
  if (k == 0 || total == 0) return;
  std::vector<float> mags;
  mags.reserve(total);
  for (Tensor* w : ws)
    for (int64_t i = 0; i < w->elements(); ++i) mags.push_back(std::fabs(w->data<float>()[i]));
  std::nth_element(mags.begin(), mags.begin() + long(k - 1), mags.end());
  const float thr = mags[k - 1];
  // Count strictly below the threshold, then remove ties in order up to k.
  size_t below = 0;
  for (float v : mags) below += v < thr;
  size_t ties_to_cut = k - std::min(k, below);
  for (Tensor* w : ws)
    for (int64_t i = 0; i < w->elements(); ++i) {
      float& v = w->data<float>()[i];
      float a = std::fabs(v);
      if (a < thr) v = 0.f;
      else if (a == thr && ties_to_cut) { v = 0.f; --ties_to_cut; }
    }
}

double zero_fraction(const Tensor& w) {
  int64_t z = 0;
  for (int64_t i = 0; i < w.elements(); ++i) z += w.data<float>()[i] == 0.f;
  return w.elements() ? double(z) / double(w.elements()) : 0;
}

void prune(TransformContext& ctx) {
  ir::ModelIR& m = ctx.model;
  const double sparsity = ctx.options.get_double("sparsity", 0.5);
  const std::string scope = ctx.options.get_string("scope", "global");
  const int64_t min_size = ctx.options.get_int("min_size", 0);
  // min_cols=N: only matrices whose rows sum over at least N inputs (fan-in) are pruned.
  // Without fine-tuning, a weight matters less the more inputs its neuron sums over, so
  // post-training pruning keeps to wide layers.
  const int64_t min_cols = ctx.options.get_int("min_cols", 0);
  if (sparsity < 0 || sparsity >= 1) throw std::runtime_error("prune: sparsity must be in [0, 1)");
  if (scope != "global" && scope != "layer") throw std::runtime_error("prune: scope must be global or layer");

  auto refs = weight_tensors(m);
  // A weight shared by two nodes is pruned once.
  std::vector<WeightRef> uniq;
  for (auto& r : refs) {
    bool seen = false;
    for (auto& u : uniq) seen = seen || u.tensor == r.tensor;
    if (!seen) uniq.push_back(r);
  }
  std::vector<Tensor> ws;
  std::vector<double> target;
  std::vector<bool> own_target;
  for (auto& r : uniq) {
    ws.push_back(constant_f32(m, r.tensor));
    std::string key = "sparsity@" + r.name;
    own_target.push_back(ctx.options.has(key));
    target.push_back(ctx.options.get_double(key, sparsity));
    if (target.back() < 0 || target.back() >= 1) throw std::runtime_error("prune: " + key + " must be in [0, 1)");
  }
  for (const auto& kv : ctx.options.all())
    if (kv.first.rfind("sparsity@", 0) == 0) {
      bool known = false;
      for (auto& r : uniq) known = known || kv.first == "sparsity@" + r.name;
      if (!known) throw std::runtime_error("prune: no weight tensor named '" + kv.first.substr(9) + "'");
    }
  std::vector<double> before;
  for (auto& w : ws) before.push_back(zero_fraction(w));
  auto fan_in = [&](size_t i) { return ws[i].elements() / std::max<int64_t>(1, ws[i].shape()[size_t(uniq[i].out_axis)]); };
  auto skipped = [&](size_t i) { return ws[i].elements() < min_size || fan_in(i) < min_cols; };
  // Block shape per tensor (1x1 = unstructured).
  const std::string block = ctx.options.get_string("block", "csr");
  const double tolerance = ctx.options.get_double("block_tolerance", kDefaultBlockTolerance);
  if (tolerance < 1) throw std::runtime_error("prune: block_tolerance must be >= 1");
  if (block != "auto") parse_block_shape(block, "prune: block");
  for (const auto& kv : ctx.options.all())
    if (kv.first.rfind("block@", 0) == 0) {
      bool known = false;
      for (auto& r : uniq) known = known || kv.first == "block@" + r.name;
      if (!known) throw std::runtime_error("prune: no weight tensor named '" + kv.first.substr(6) + "'");
    }
  std::vector<BlockShape> shapes(ws.size());
  std::vector<MatrixView> views(ws.size());
  std::vector<std::string> why(ws.size());
  bool blocked = false;
  for (size_t i = 0; i < ws.size(); ++i) {
    views[i] = matrix_view(uniq[i], ws[i].shape());
    const std::string b = ctx.options.get_string("block@" + uniq[i].name, block);
    if (skipped(i)) continue;
    if (b == "auto") {
      shapes[i] = choose_block_shape(ws[i].data<float>(), views[i], kernel_kind(m, uniq[i]), target[i],
                                     tolerance, &why[i]);
    } else {
      shapes[i] = parse_block_shape(b, "prune: block@" + uniq[i].name);
      if (!block_fits(shapes[i], views[i])) {
        why[i] = shapes[i].str() + " does not tile " + std::to_string(views[i].rows) + "x" +
                 std::to_string(views[i].cols) + ": unstructured";
        shapes[i] = {1, 1};
      }
    }
    blocked = blocked || shapes[i] != BlockShape{1, 1};
  }
  auto item = [&](size_t i) {
    BlockPruneItem it;
    it.data = ws[i].data<float>();
    it.view = views[i];
    it.shape = shapes[i];
    return it;
  };
  std::vector<Tensor*> global;
  std::vector<BlockPruneItem> global_items;
  for (size_t i = 0; i < ws.size(); ++i) {
    if (skipped(i)) continue;
    if (scope == "layer" || own_target[i]) {
      if (blocked) {
        std::vector<BlockPruneItem> one{item(i)};
        prune_blocks_group(one, target[i]);
      } else {
        std::vector<Tensor*> one{&ws[i]};
        prune_group(one, target[i]);
      }
    } else {
      global.push_back(&ws[i]);
      global_items.push_back(item(i));
    }
  }
  // Unstructured everywhere keeps the plain magnitude path (ties cut in order, exactly
  // `sparsity` of the weights); with blocks the group is cut by whole blocks.
  if (blocked)
    prune_blocks_group(global_items, sparsity);
  else
    prune_group(global, sparsity);

  char line[256];
  ctx.report << "prune (" << scope << ", magnitude, target " << sparsity << "):\n";
  int64_t total = 0, zeros = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    if (skipped(i)) continue;  // left exactly as stored
    uint64_t old_bytes = stored_bytes(m, uniq[i].tensor);
    Layout stored = store_smallest(m, uniq[i].tensor, ws[i]);
    double z = zero_fraction(ws[i]);
    total += ws[i].elements();
    zeros += int64_t(std::llround(z * double(ws[i].elements())));
    std::snprintf(line, sizeof line, "  %-24s %9lld params  sparsity %5.1f%% -> %5.1f%%  block %s  %-7s  %llu -> %llu bytes\n",
                  uniq[i].name.c_str(), (long long)ws[i].elements(), 100 * before[i], 100 * z,
                  shapes[i].str().c_str(), layout_name(stored).c_str(), (unsigned long long)old_bytes,
                  (unsigned long long)stored_bytes(m, uniq[i].tensor));
    ctx.report << line;
    if (!why[i].empty()) ctx.report << "    " << why[i] << "\n";
  }
  std::snprintf(line, sizeof line, "  total sparsity %.2f%% of %lld weights\n", total ? 100.0 * zeros / total : 0.0,
                (long long)total);
  ctx.report << line;
  std::string params = "{\"sparsity\":" + std::to_string(sparsity) + ",\"scope\":\"" + scope +
                       "\",\"criterion\":\"magnitude\",\"min_size\":" + std::to_string(min_size) +
                       ",\"min_cols\":" + std::to_string(min_cols) + ",\"block\":\"" + json_escape(block) + "\"";
  if (block == "auto") params += ",\"block_tolerance\":" + std::to_string(tolerance);
  for (size_t i = 0; i < uniq.size(); ++i)
    if (!skipped(i) && (blocked || block != "csr"))
      params += ",\"block@" + json_escape(uniq[i].name) + "\":\"" + shapes[i].str() + "\"";
  for (size_t i = 0; i < uniq.size(); ++i)
    if (own_target[i]) params += ",\"sparsity@" + json_escape(uniq[i].name) + "\":" + std::to_string(target[i]);
  ctx.parameters = params + "}";
}

}  // namespace
}  // namespace compress
}  // namespace minnow

MINNOW_DEFINE_TRANSFORM("prune", "0.1.0", "magnitude pruning of weight matrices (global or per layer, unstructured or in blocks), stored CSR / BSR when smaller",
                        minnow::compress::prune)
