#include "block_prune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace minnow {
namespace compress {

MatrixView matrix_view(const WeightRef& r, const Shape& s) {
  MatrixView v;
  if (r.op == "LSTM" || r.op == "GRU" || r.op == "RNN") {  // [directions, gates x hidden, in]
    v.rows = s[0] * s[1];
    v.cols = s.size() > 2 ? s[2] : 1;
  } else if (r.out_axis == 0) {  // Conv [M, C, kh, kw], Gemm transB = 1 [N, K]
    v.rows = s[0];
    v.cols = shape_elements(s) / std::max<int64_t>(1, s[0]);
  } else {  // MatMul / Gemm transB = 0: B stored [K, N]
    v.rows = s[1];
    v.cols = s[0];
    v.transposed = true;
  }
  return v;
}

cpu_sparse::Kind kernel_kind(const ir::ModelIR& m, const WeightRef& r) {
  if (r.op != "Conv") return cpu_sparse::Kind::kFc;
  const ir::Node& node = m.graph.nodes[size_t(r.node)];
  const Shape s = m.graph.tensors[size_t(r.tensor)].static_shape();
  auto all = [&](const char* name, int64_t want) {
    const ir::Attribute* a = node.attr(name);
    if (!a) return true;
    for (int64_t x : a->ints)
      if (x != want) return false;
    return true;
  };
  const ir::Attribute* group = node.attr("group");
  const ir::Attribute* auto_pad = node.attr("auto_pad");
  const bool pads_ok = !auto_pad || auto_pad->s == "NOTSET" || auto_pad->s == "VALID";
  const bool pointwise = s.size() == 4 && s[2] == 1 && s[3] == 1 && all("strides", 1) && all("pads", 0) &&
                         pads_ok && (!group || group->i == 1);
  return pointwise ? cpu_sparse::Kind::kConv1x1 : cpu_sparse::Kind::kConvIm2col;
}

BlockShape parse_block_shape(const std::string& text, const std::string& what) {
  if (text == "csr" || text == "1x1") return {1, 1};
  for (BlockShape s : cpu_sparse::kBlockShapes)
    if (s.str() == text) return s;
  throw std::runtime_error(what + ": block shape '" + text + "' is not one of csr, 1x1, 1x4, 4x1, 1x8" +
                           (what.find("block@") == std::string::npos ? ", auto" : ""));
}

bool block_fits(BlockShape s, const MatrixView& v) {
  return v.rows > 0 && v.cols > 0 && v.cols % s.c == 0 && v.rows >= s.r;
}

namespace {

struct BlockScore {
  float score;  // mean square of the block's elements
  uint32_t item;
  int64_t index;  // block index, row-major over the item's block grid
  int32_t count;  // elements in the block (edge blocks of a 4x1 grid may hold fewer)
};

// The blocks of one item, scored.
void score_blocks(const float* data, const MatrixView& view, BlockShape s, uint32_t item,
                  std::vector<BlockScore>* out) {
  const int64_t brows = (view.rows + s.r - 1) / s.r, bcols = (view.cols + s.c - 1) / s.c;
  for (int64_t br = 0; br < brows; ++br)
    for (int64_t bc = 0; bc < bcols; ++bc) {
      double sum = 0;
      int32_t count = 0;
      for (int64_t n = br * s.r; n < std::min(view.rows, (br + 1) * s.r); ++n)
        for (int64_t k = bc * s.c; k < std::min(view.cols, (bc + 1) * s.c); ++k) {
          const double w = data[view.at(n, k)];
          sum += w * w;
          ++count;
        }
      out->push_back({static_cast<float>(sum / std::max(1, count)), item, br * bcols + bc, count});
    }
}

void zero_block(BlockPruneItem& it, int64_t index) {
  const BlockShape s = it.shape;
  const int64_t bcols = (it.view.cols + s.c - 1) / s.c, br = index / bcols, bc = index % bcols;
  for (int64_t n = br * s.r; n < std::min(it.view.rows, (br + 1) * s.r); ++n)
    for (int64_t k = bc * s.c; k < std::min(it.view.cols, (bc + 1) * s.c); ++k) {
      const size_t e = it.view.at(n, k);
      it.data[e] = 0.f;
      if (it.free) it.free[e] = 0;
    }
}

// The blocks to zero for `target` of the elements, smallest first.
std::vector<BlockScore> pick(std::vector<BlockScore> blocks, int64_t total, double target) {
  const int64_t k = static_cast<int64_t>(std::llround(target * static_cast<double>(total)));
  std::sort(blocks.begin(), blocks.end(), [](const BlockScore& a, const BlockScore& b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.item != b.item) return a.item < b.item;
    return a.index < b.index;
  });
  int64_t zeroed = 0;
  size_t n = 0;
  while (n < blocks.size() && zeroed < k) zeroed += blocks[n++].count;
  blocks.resize(n);
  return blocks;
}

}  // namespace

void prune_blocks_group(std::vector<BlockPruneItem>& items, double target) {
  std::vector<BlockScore> blocks;
  int64_t total = 0;
  for (uint32_t i = 0; i < items.size(); ++i) {
    if (!block_fits(items[i].shape, items[i].view) && items[i].shape != BlockShape{1, 1})
      throw std::runtime_error("block " + items[i].shape.str() + " does not tile a " +
                               std::to_string(items[i].view.rows) + "x" + std::to_string(items[i].view.cols) +
                               " matrix");
    score_blocks(items[i].data, items[i].view, items[i].shape, i, &blocks);
    total += items[i].view.rows * items[i].view.cols;
  }
  if (target <= 0 || total == 0) return;
  for (const BlockScore& b : pick(std::move(blocks), total, target)) zero_block(items[b.item], b.index);
}

double removed_energy(const float* data, const MatrixView& v, BlockShape s, double sparsity) {
  std::vector<BlockScore> blocks;
  score_blocks(data, v, s, 0, &blocks);
  double all = 0, removed = 0;
  for (const BlockScore& b : blocks) all += double(b.score) * b.count;
  for (const BlockScore& b : pick(std::move(blocks), v.rows * v.cols, sparsity)) removed += double(b.score) * b.count;
  return all > 0 ? removed / all : 0.0;
}

BlockShape choose_block_shape(const float* data, const MatrixView& v, cpu_sparse::Kind kind,
                              double sparsity, double tolerance, std::string* why) {
  struct Candidate {
    BlockShape shape;
    double energy, ratio;  // removed squared magnitude; predicted t_sparse / t_dense
  };
  std::vector<Candidate> cands;
  for (BlockShape s : cpu_sparse::kBlockShapes)
    if (s == BlockShape{1, 1} || block_fits(s, v))
      cands.push_back({s, removed_energy(data, v, s, sparsity), cpu_sparse::predicted_ratio(kind, s, sparsity)});
  const Candidate csr = cands.front();  // kBlockShapes starts with 1x1
  // The fastest shape within the loss budget; then, among those predicted within 10 % of
  // it (closer than the cost model can tell apart), the one that loses least.
  double fastest = csr.ratio;
  for (const Candidate& c : cands)
    if (c.energy <= tolerance * csr.energy) fastest = std::min(fastest, c.ratio);
  Candidate best = csr;
  for (const Candidate& c : cands)
    if (c.energy <= tolerance * csr.energy && c.ratio <= 1.1 * fastest &&
        (best.ratio > 1.1 * fastest || c.energy < best.energy))
      best = c;
  if (fastest >= 1.0) best = csr;  // sparse never wins here: keep the least loss
  if (why) {
    char line[200];
    std::string tried;
    for (const Candidate& c : cands) {
      if (c.shape == BlockShape{1, 1}) continue;
      std::snprintf(line, sizeof line, "%s%s %.2fx / %.2f", tried.empty() ? "" : ", ", c.shape.str().c_str(),
                    csr.energy > 0 ? c.energy / csr.energy : 1.0, c.ratio);
      tried += line;
    }
    if (fastest >= 1.0)
      *why = std::string("sparse does not beat dense for ") + cpu_sparse::kind_name(kind) +
             " here: unstructured (least loss)";
    else {
      std::snprintf(line, sizeof line, "predicted %.2fx of dense time, removes %.2fx the energy of unstructured",
                    best.ratio, csr.energy > 0 ? best.energy / csr.energy : 1.0);
      *why = line;
    }
    if (!tried.empty()) *why += " (energy / predicted time of the block shapes: " + tried + ")";
  }
  return best.shape;
}

}  // namespace compress
}  // namespace minnow
