#include "thresholds.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace minnow {
namespace cpu_sparse {

namespace {

// ---- Measured table ----------------------------------------------------------------
// Measured by `RUNS=41 bench/sparse.sh build` (sparse_bench --runs 41 --fit ...) run three
// times in a row, 2026-12-01 12:15 UTC, load average 0.1-0.6 (quiet), on the x86 build
// machine (AMD EPYC Zen 3, 2 cores, AVX2 + FMA: Highway target AVX2), 1 thread, against
// cpu_dense's SIMD kernels (packed-panel f32_gemm_6x2v, conv via packed GEMM); each row is
// the median over the three runs of the coefficients --fit printed. Timing: dense and
// sparse in alternating samples of as many runs as last ~0.2 ms (sparse_bench time_pair);
// the three fits agree within 4 points of break-even, where single-run samples (the
// table before) moved by up to 25 %. Layers: MobileNetV2 1x1 stack 56x56x24-144,
// 28x28x32-192, 14x14x64-384, 7x7x160-960; conv3x3 28x28x32-32 pad 1; fc 784-300, 300-100,
// 512x128; sparsity 30-95 %. Examples behind the fit (dense/sparse, medians): conv1x1
// 7x7x160-960 CSR 90 %: 5.37x, 1x4 70 %: 2.14x, 1x4 50 %: 1.32x; fc 784-300 CSR 90 %:
// 2.01x, 1x4 50 %: 1.08x; fc 300-100 CSR 90 %: 1.39x; fc 512x128 CSR 90 %: 1.32x, 1x4 50 %:
// 0.93x (so 1x4 fc now breaks even at 52 %, and 50 % stays dense), CSR 50 %: 0.33x. The
// im2col sparse convolution never breaks even against the packed dense GEMM (im2col
// dominates it), so general convolutions stay dense.
// Previous tables: 2026-12-01 11:42 (single-run samples, fc 1x4 at 44 %), 2026-12-01 before
// the strip / panel kernels (fc / 1x1 at 18-88 %), 2025-05 against the scalar reference
// dense kernels.
const Calibration kTable[] = {
    {Kind::kFc, {1, 1}, 0.1993, 4.7694},  // break-even sparsity 83%
    {Kind::kFc, {1, 4}, 0.1540, 1.7554},  // break-even sparsity 52%
    {Kind::kFc, {4, 1}, 0.0979, 2.3139},  // break-even sparsity 61%
    {Kind::kFc, {1, 8}, 0.2006, 1.2807},  // break-even sparsity 38%
    {Kind::kConv1x1, {1, 1}, 0.1197, 1.2641},  // break-even sparsity 30%
    {Kind::kConv1x1, {1, 4}, 0.1351, 1.2085},  // break-even sparsity 28%
    {Kind::kConv1x1, {4, 1}, 0.1366, 0.9525},  // break-even sparsity 9%
    {Kind::kConv1x1, {1, 8}, 0.1388, 1.1535},  // break-even sparsity 25%
    {Kind::kConvIm2col, {1, 1}, 1.3016, 1.3128},  // break-even sparsity 123%
    {Kind::kConvIm2col, {1, 4}, 1.3063, 1.2508},  // break-even sparsity 124%
    {Kind::kConvIm2col, {4, 1}, 1.3224, 0.7030},  // break-even sparsity 146%
    {Kind::kConvIm2col, {1, 8}, 1.3304, 1.1513},  // break-even sparsity 129%
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

// Zero elements of w[0, n), counted in a loop the compiler vectorises. With
// `until_nonzero`, stops at the first nonzero element and returns -1 there.
int64_t count_zeros(const float* w, int64_t n, bool until_nonzero) {
  constexpr int64_t kChunk = 4096;
  int64_t zeros = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t i1 = std::min(n, i0 + kChunk);
    int64_t z = 0;
    for (int64_t i = i0; i < i1; ++i) z += w[i] == 0.0f ? 1 : 0;
    if (until_nonzero && z != i1 - i0) return -1;
    zeros += z;
  }
  return zeros;
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
  // The bid runs for every weight of every model, dense ones included, and scanning each
  // block shape costs a pass over the weights (most of resnet50's prepare time). One
  // cheaper pass bounds them all: a zero block is all zero elements, so for any shape
  // zero blocks <= (zero elements + padded rows' elements) / block size. A shape whose
  // bound is below its break-even would be declined by the exact count too, so it is not
  // counted; only shapes that may pass (pruned weights) get the exact scan, and the
  // choice is the same as counting every shape. Where break-even is 100 % (im2col
  // convolution), only an all-zero matrix passes: the first nonzero element settles it.
  int64_t zeros = -2;  // -2: not counted (forced shape); -1: a nonzero element exists
  if (!forced.r && rows > 0 && cols > 0) {
    bool any_below_one = false;
    for (BlockShape s : kBlockShapes)
      if (shape_fits(s, rows, cols) && break_even_sparsity(kind, s) < 1.0) any_below_one = true;
    zeros = count_zeros(w, rows * cols, !any_below_one);
  }
  for (BlockShape s : kBlockShapes) {
    if (forced.r && s != forced) continue;
    if (!shape_fits(s, rows, cols)) continue;
    if (zeros != -2) {
      const double be = break_even_sparsity(kind, s);
      const int64_t padded_rows = (rows + s.r - 1) / s.r * s.r;
      const double bound =
          zeros < 0 ? -1.0
                    : static_cast<double>(zeros + (padded_rows - rows) * cols) /
                          static_cast<double>(padded_rows * cols);
      if (bound < be) {
        best_sp = std::max(best_sp, std::max(bound, 0.0));
        seen += (seen.empty() ? "" : ", ") + s.str() +
                (zeros < 0 ? " not all zero (break-even " + pct(be) + ")"
                            : " <= " + pct(bound) + " < " + pct(be));
        continue;
      }
    }
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
