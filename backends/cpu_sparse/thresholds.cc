#include "thresholds.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace minnow {
namespace cpu_sparse {

namespace {

// ---- Measured table ----------------------------------------------------------------
// Measured by bench/sparse.sh on the x86 build machine (AMD EPYC, AVX-512: Highway target
// AVX3), 1 thread, against cpu_dense's *reference* kernels (scalar loops), 2025-05:
//   sparse_bench --runs 5 --quick --fit  (layers: MobileNetV2 1x1 stack 56x56x24-144,
//   28x28x32-192, 14x14x64-384, 7x7x160-960; conv3x3 28x28x32-32 pad 1; fc 784-300,
//   300-100, 512x128; sparsity 50/70/90 %). Examples behind the fit (dense/sparse):
//   fc 784-300 CSR 90 %: 11.5x, 1x4 90 %: 39x; conv1x1 7x7x160-960 1x8 90 %: 627x,
//   CSR 30 %: ~80x. Against the reference dense kernels every fit breaks even below 0 %
//   sparsity, so kMinSparsity (20 %) is the effective threshold for now. Re-run when
//   cpu_dense gets its SIMD kernels and paste the printed table here.
// (conv_im2col 1x4 fitted a slightly negative slope: im2col dominates that kernel, the
// ratio is flat at ~0.07; break_even_sparsity treats slope <= 0 with r0 < 1 as "always".)
const Calibration kTable[] = {
    {Kind::kFc, {1, 1}, 0.0531, 0.6312},          // break-even sparsity 0%
    {Kind::kFc, {1, 4}, 0.0239, 0.1929},          // break-even sparsity 0%
    {Kind::kFc, {4, 1}, 0.0062, 0.2264},          // break-even sparsity 0%
    {Kind::kFc, {1, 8}, 0.0247, 0.0912},          // break-even sparsity 0%
    {Kind::kConv1x1, {1, 1}, 0.0015, 0.0270},     // break-even sparsity 0%
    {Kind::kConv1x1, {1, 4}, 0.0011, 0.0188},     // break-even sparsity 0%
    {Kind::kConv1x1, {4, 1}, 0.0009, 0.0170},     // break-even sparsity 0%
    {Kind::kConv1x1, {1, 8}, 0.0019, 0.0136},     // break-even sparsity 0%
    {Kind::kConvIm2col, {1, 1}, 0.0217, 0.1121},  // break-even sparsity 0%
    {Kind::kConvIm2col, {1, 4}, 0.0750, -0.0272}, // flat (see above)
    {Kind::kConvIm2col, {4, 1}, 0.0576, 0.0329},  // break-even sparsity 0%
    {Kind::kConvIm2col, {1, 8}, 0.0729, 0.0278},  // break-even sparsity 0%
};

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.0f%%", 100.0 * v);
  return b;
}

// MINNOW_CPU_SPARSE_BLOCK=RxC, or {0,0} when unset / malformed.
BlockShape forced_shape() {
  const char* e = std::getenv("MINNOW_CPU_SPARSE_BLOCK");
  int r = 0, c = 0;
  if (!e || std::sscanf(e, "%dx%d", &r, &c) != 2) return {0, 0};
  for (BlockShape s : kBlockShapes)
    if (s.r == r && s.c == c) return s;
  return {0, 0};
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kFc: return "fc";
    case Kind::kConv1x1: return "conv1x1";
    default: return "conv_im2col";
  }
}

const Calibration* calibration(Kind kind, BlockShape shape) {
  for (const Calibration& c : kTable)
    if (c.kind == kind && c.shape == shape) return &c;
  return nullptr;
}

double break_even_sparsity(Kind kind, BlockShape shape) {
  const Calibration* c = calibration(kind, shape);
  if (!c) return 1.0;
  if (c->slope <= 0) return c->r0 < 1.0 ? kMinSparsity : 1.0;  // flat or falling: r0 decides
  const double density = std::clamp((1.0 - c->r0) / c->slope, 0.0, 1.0);
  return std::max(kMinSparsity, 1.0 - density);
}

double predicted_ratio(Kind kind, BlockShape shape, double block_sparsity) {
  const Calibration* c = calibration(kind, shape);
  if (!c) return 1e9;
  // Never predict less than 2 % of dense: the fit is linear, the kernels have overheads.
  return std::max(0.02, c->r0 + c->slope * (1.0 - block_sparsity));
}

LayoutChoice choose_layout(Kind kind, const float* w, int64_t rows, int64_t cols,
                           bool transposed) {
  LayoutChoice best;
  const BlockShape forced = forced_shape();
  std::string seen;
  double best_sp = -1;
  BlockShape best_sp_shape;
  for (BlockShape s : kBlockShapes) {
    if (forced.r && s != forced) continue;
    if (!shape_fits(s, rows, cols)) continue;
    const double sp = block_sparsity(w, rows, cols, s, transposed);
    if (sp > best_sp) {
      best_sp = sp;
      best_sp_shape = s;
    }
    const double be = break_even_sparsity(kind, s);
    if (!forced.r && sp < be) {
      seen += (seen.empty() ? "" : ", ") + s.str() + " " + pct(sp) + " < " + pct(be);
      continue;
    }
    const double ratio = predicted_ratio(kind, s, sp);
    if (!best.ok || ratio < best.ratio) {
      best.ok = true;
      best.shape = s;
      best.sparsity = sp;
      best.ratio = ratio;
      char b[200];
      std::snprintf(b, sizeof(b), "%s blocks %s zero (break-even %s for %s): ~%.2fx dense time%s",
                    s.str().c_str(), pct(sp).c_str(), pct(be).c_str(), kind_name(kind), ratio,
                    forced.r ? " [MINNOW_CPU_SPARSE_BLOCK]" : "");
      best.reason = b;
    }
  }
  if (!best.ok) {
    if (best_sp < 0)
      best.reason = "no block shape fits a " + std::to_string(rows) + "x" + std::to_string(cols) + " matrix";
    else
      best.reason = "weights not sparse enough for " + std::string(kind_name(kind)) +
                    " (zero blocks vs break-even: " + seen + ")";
  }
  return best;
}

}  // namespace cpu_sparse
}  // namespace minnow
