#include "thresholds.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace minnow {
namespace cpu_sparse {

namespace {

// ---- Measured table ----------------------------------------------------------------
// Measured by `sparse_bench --runs 21 --fit` (what bench/sparse.sh runs) on the x86 build
// machine (AMD EPYC, AVX2 + FMA: Highway target AVX2), 1 thread, against cpu_dense's SIMD
// kernels (packed-panel f32_gemm_6x2v, conv via packed GEMM), 2026-12-01, on a loaded
// machine (ratios are measured in the same process, so load hits both sides). Layers:
// MobileNetV2 1x1 stack 56x56x24-144, 28x28x32-192, 14x14x64-384, 7x7x160-960; conv3x3
// 28x28x32-32 pad 1; fc 784-300, 300-100, 512x128; sparsity 50/70/90 %. Examples behind the
// fit (dense/sparse): fc 784-300 CSR 90 %: 2.2x, 1x8 90 %: 6.6x, CSR 50 %: 0.48x;
// conv1x1 56x56x24-144 1x8 90 %: 2.25x. Against the packed dense GEMM the im2col sparse
// convolution never breaks even (im2col dominates it; break-even above 100 %), so general
// convolutions stay dense. The previous table (2025-05) was fitted against the scalar
// reference dense kernels and broke even below 0 % everywhere.
const Calibration kTable[] = {
    {Kind::kFc, {1, 1}, 0.2766, 6.0818},          // break-even sparsity 88%
    {Kind::kFc, {1, 4}, 0.2332, 1.5965},          // break-even sparsity 52%
    {Kind::kFc, {4, 1}, 0.1149, 2.0257},          // break-even sparsity 56%
    {Kind::kFc, {1, 8}, 0.1770, 1.0009},          // break-even sparsity 18%
    {Kind::kConv1x1, {1, 1}, 0.1346, 2.5754},     // break-even sparsity 66%
    {Kind::kConv1x1, {1, 4}, 0.0882, 1.7597},     // break-even sparsity 48%
    {Kind::kConv1x1, {4, 1}, 0.1440, 1.6949},     // break-even sparsity 49%
    {Kind::kConv1x1, {1, 8}, 0.0781, 2.0174},     // break-even sparsity 54%
    {Kind::kConvIm2col, {1, 1}, 1.4321, 1.2042},  // break-even sparsity 136%
    {Kind::kConvIm2col, {1, 4}, 1.3872, 1.2584},  // break-even sparsity 131%
    {Kind::kConvIm2col, {4, 1}, 1.0144, 2.8646},  // break-even sparsity 101%
    {Kind::kConvIm2col, {1, 8}, 1.3439, 1.3227},  // break-even sparsity 126%
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
