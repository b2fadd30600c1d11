#include "thresholds.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace minnow {
namespace cpu_sparse {

namespace {

// ---- Measured table ----------------------------------------------------------------
// Measured by `RUNS=41 bench/sparse.sh build` (sparse_bench --runs 41 --fit ...) run five
// times in a row, 2026-12-01 11:42 UTC, load average 0.9 (quiet), on the x86 build machine
// (AMD EPYC Zen 3, 2 cores, AVX2 + FMA: Highway target AVX2), 1 thread, against
// cpu_dense's SIMD kernels (packed-panel f32_gemm_6x2v, conv via packed GEMM); the line is
// fitted (as --fit does) to the median over the five runs of each point's t_sparse/t_dense,
// after the small-spatial conv1x1 strips and the fc row panels. Layers: MobileNetV2 1x1
// stack 56x56x24-144, 28x28x32-192, 14x14x64-384, 7x7x160-960; conv3x3 28x28x32-32 pad 1;
// fc 784-300, 300-100, 512x128; sparsity 30-95 %. Examples behind the fit (dense/sparse,
// medians): conv1x1 7x7x160-960 CSR 90 %: 4.85x, 1x4 70 %: 2.16x, 1x4 50 %: 1.36x; fc
// 784-300 CSR 90 %: 2.79x, 1x4 50 %: 1.15x; fc 512x128 CSR 90 %: 1.57x, 1x4 50 %: 1.01x,
// CSR 50 %: 0.41x. The im2col sparse convolution still never breaks even against the packed
// dense GEMM (im2col dominates it), so general convolutions stay dense. The same five runs
// on the loaded machine at 11:30 (load 1.6-3.7) fitted 1x4 fc at 52 % instead of 44 %.
// Previous tables: 2026-12-01 before these kernels (fc / 1x1 at 18-88 %), 2025-05 against
// the scalar reference dense kernels.
const Calibration kTable[] = {
    {Kind::kFc, {1, 1}, 0.0873, 4.1220},  // break-even sparsity 78%
    {Kind::kFc, {1, 4}, 0.0944, 1.6295},  // break-even sparsity 44%
    {Kind::kFc, {4, 1}, 0.1153, 1.7818},  // break-even sparsity 50%
    {Kind::kFc, {1, 8}, 0.1771, 1.2535},  // break-even sparsity 34%
    {Kind::kConv1x1, {1, 1}, 0.1045, 1.2748},  // break-even sparsity 30%
    {Kind::kConv1x1, {1, 4}, 0.1192, 1.1748},  // break-even sparsity 25%
    {Kind::kConv1x1, {4, 1}, 0.1363, 0.9577},  // break-even sparsity 10%
    {Kind::kConv1x1, {1, 8}, 0.1231, 1.1421},  // break-even sparsity 23%
    {Kind::kConvIm2col, {1, 1}, 1.3020, 1.4008},  // break-even sparsity 122%
    {Kind::kConvIm2col, {1, 4}, 1.2911, 1.0715},  // break-even sparsity 127%
    {Kind::kConvIm2col, {4, 1}, 1.3327, 0.6541},  // break-even sparsity 151%
    {Kind::kConvIm2col, {1, 8}, 1.2525, 1.3283},  // break-even sparsity 119%
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
