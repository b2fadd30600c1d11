#include "thresholds.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace minnow {
namespace cpu_sparse {

namespace {

// ---- Measured table ----------------------------------------------------------------
// Measured by `RUNS=41 bench/sparse.sh build` (sparse_bench --runs 41 --fit ...) run three
// times in a row, 2026-12-01 16:49 UTC, load average ~1, on the x86 build machine (AMD
// EPYC Zen 3, 2 cores, AVX2 + FMA: Highway target AVX2), 1 thread, against cpu_dense's
// SIMD kernels (packed-panel f32_gemm_6x2v, conv via packed GEMM), with the tiled CSR
// panels (fc 1x1, windows cut per panel). r0 and slope: the median over the three runs of
// each coefficient --fit printed; break-even: per layer where its ratio crosses 1, the
// highest over the three runs and then over the layers ("30%" = already faster at the
// lowest sparsity measured), so that a layer that lost once is not bid for. Timing: dense
// and sparse in alternating samples of as many runs as last ~0.2 ms (sparse_bench
// time_pair). Layers: MobileNetV2 1x1 stack 56x56x24-144, 28x28x32-192, 14x14x64-384,
// 7x7x160-960; conv3x3 28x28x32-32 pad 1; fc 784-300, 300-100, 512x128; sparsity 30-95 %.
// Examples (dense/sparse, three runs): fc 300-100 CSR 90 %: 2.03x 2.31x 2.13x, 1x4 70 %:
// 1.42x 1.57x 1.57x, 1x4 50 %: 1.00x 1.13x 1.13x; fc 512x128 CSR 90 %: 1.94x 1.85x 1.90x,
// 1x4 50 %: 0.94x 0.89x 0.98x (so 1x4 fc breaks even at 56 % and 50 % stays dense); fc
// 784-300 CSR 90 %: 3.45x 3.58x 3.66x. The im2col sparse convolution never breaks even
// against the packed dense GEMM (im2col dominates it), so general convolutions stay dense.
// Previous tables: 2026-12-01 16:03 (tiles on aligned windows, break-even the median over
// runs), 12:15 (CSR panels: fc CSR break-even 83 %, fit only), 11:42 (single-run samples),
// before the strip / panel kernels (fc / 1x1 at 18-88 %), 2025-05 against the scalar
// reference dense kernels.
const Calibration kTableAvx2[] = {
    {Kind::kFc, {1, 1}, 0.2870, 1.4117, 0.55},  // fit 49%; measured: lstm_fc_gates_512x128 54%, mlp_fc_300-100 55%, mlp_fc_784-300 45%
    {Kind::kFc, {1, 4}, 0.1616, 1.5827, 0.56},  // fit 47%; measured: lstm_fc_gates_512x128 56%, mlp_fc_300-100 50%, mlp_fc_784-300 40%
    {Kind::kFc, {4, 1}, 0.1298, 2.3213, 0.66},  // fit 63%; measured: lstm_fc_gates_512x128 66%, mlp_fc_300-100 61%, mlp_fc_784-300 56%
    {Kind::kFc, {1, 8}, 0.2967, 1.2813, 0.64},  // fit 45%; measured: lstm_fc_gates_512x128 64%, mlp_fc_784-300 32%
    {Kind::kConv1x1, {1, 1}, 0.1416, 1.2178, 0.39},  // fit 30%; measured: mbv2_1x1_14x14x64-384 30%, mbv2_1x1_28x28x32-192 30%, mbv2_1x1_56x56x24-144 30%, mbv2_1x1_7x7x160-960 39%
    {Kind::kConv1x1, {1, 4}, 0.1561, 1.0575, 0.31},  // fit 20%; measured: mbv2_1x1_14x14x64-384 30%, mbv2_1x1_28x28x32-192 30%, mbv2_1x1_56x56x24-144 30%, mbv2_1x1_7x7x160-960 31%
    {Kind::kConv1x1, {4, 1}, 0.1647, 0.9964, 0.30},  // fit 16%; measured: mbv2_1x1_14x14x64-384 30%, mbv2_1x1_28x28x32-192 30%, mbv2_1x1_56x56x24-144 30%, mbv2_1x1_7x7x160-960 30%
    {Kind::kConv1x1, {1, 8}, 0.1536, 1.0188, 0.33},  // fit 17%; measured: mbv2_1x1_14x14x64-384 30%, mbv2_1x1_28x28x32-192 30%, mbv2_1x1_56x56x24-144 30%, mbv2_1x1_7x7x160-960 33%
    {Kind::kConvIm2col, {1, 1}, 1.5167, 0.9165, 1.00},  // fit 150%; measured: conv3x3_28x28x32-32 100%
    {Kind::kConvIm2col, {1, 4}, 1.5333, 0.8210, 1.00},  // fit 150%; measured: conv3x3_28x28x32-32 100%
    {Kind::kConvIm2col, {4, 1}, 1.5260, 0.7249, 1.00},  // fit 150%; measured: conv3x3_28x28x32-32 100%
    {Kind::kConvIm2col, {1, 8}, 1.3517, 1.0769, 1.00},  // fit 133%; measured: conv3x3_28x28x32-32 100%
};

// The same on an AVX-512 machine (Highway target AVX3: 16-lane tiles, see sparse_matrix.h),
// measured the same way (three consecutive `RUNS=41 bench/sparse.sh build`, median r0 and
// slope, highest break-even) on 2026-12-02 04:51-04:56 UTC, Intel Xeon (Sapphire Rapids,
// 2 cores, one 512-bit FMA port: 87 GFLOP/s a core in zmm, 95 in ymm), load ~1, against
// cpu_dense's AVX-512 kernels, with the 16-lane tiles (CSR and de-interleaved 1x4) and the
// 1xC convolution writing 16 rows per pass. Examples (dense/sparse, three runs): lstm gates
// 512x128 CSR 90 %: 2.77x 2.77x 2.80x, 1x4 70 %: 1.93x 1.86x 1.91x, 1x4 50 %: 1.40x 1.38x
// 1.38x; fc 300-100 1x4 70 %: 1.59x 1.49x 1.64x; mbv2 1x1 56x56x24-144 CSR 90 %: 2.28x 2.35x
// 2.30x. Every fc and 1x1 layer already ran faster sparse at 30 % (the lowest point) in 1x1
// and 1x4 blocks; 4x1 and 1x8 fc break even at 73 % / 68 %.
const Calibration kTableAvx512[] = {
    {Kind::kFc, {1, 1}, 0.1989, 1.0813, 0.30},  // fit 27%; measured: lstm_fc_gates_512x128 30%, mlp_fc_300-100 30%, mlp_fc_784-300 30%
    {Kind::kFc, {1, 4}, 0.1773, 1.1472, 0.30},  // fit 28%; measured: lstm_fc_gates_512x128 30%, mlp_fc_300-100 30%, mlp_fc_784-300 30%
    {Kind::kFc, {4, 1}, 0.0622, 3.2673, 0.73},  // fit 71%; measured: lstm_fc_gates_512x128 73%, mlp_fc_300-100 67%, mlp_fc_784-300 72%
    {Kind::kFc, {1, 8}, 0.2033, 1.9341, 0.68},  // fit 59%; measured: lstm_fc_gates_512x128 68%, mlp_fc_784-300 50%
    {Kind::kConv1x1, {1, 1}, 0.1738, 1.0380, 0.30},  // fit 21%; measured: every mbv2 1x1 layer 30%
    {Kind::kConv1x1, {1, 4}, 0.1775, 1.0100, 0.30},  // fit 18%; measured: every mbv2 1x1 layer 30%
    {Kind::kConv1x1, {4, 1}, 0.1795, 0.8106, 0.30},  // fit 2%; measured: every mbv2 1x1 layer 30%
    {Kind::kConv1x1, {1, 8}, 0.1847, 1.0008, 0.30},  // fit 19%; measured: every mbv2 1x1 layer 30%
    {Kind::kConvIm2col, {1, 1}, 2.8760, 1.4495, 1.00},  // fit 224%; measured: conv3x3_28x28x32-32 100%
    {Kind::kConvIm2col, {1, 4}, 2.8763, 1.4337, 1.00},  // fit 247%; measured: conv3x3_28x28x32-32 100%
    {Kind::kConvIm2col, {4, 1}, 2.9315, 0.7301, 1.00},  // fit 358%; measured: conv3x3_28x28x32-32 100%
    {Kind::kConvIm2col, {1, 8}, 2.8711, 1.4741, 1.00},  // fit 227%; measured: conv3x3_28x28x32-32 100%
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

// Zero elements of w[0, n), counted in a loop the compiler vectorises, a chunk at a time.
// Once more than `max_nonzeros` nonzero elements have been seen it stops and returns the
// zeros it saw plus every element it did not read: a bound that the count itself cannot
// exceed. With max_nonzeros 0 it returns -1 at the first nonzero element instead.
int64_t count_zeros(const float* w, int64_t n, int64_t max_nonzeros) {
  constexpr int64_t kChunk = 4096;
  int64_t zeros = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t i1 = std::min(n, i0 + kChunk);
    int64_t z = 0;
    for (int64_t i = i0; i < i1; ++i) z += w[i] == 0.0f ? 1 : 0;
    zeros += z;
    const int64_t nonzeros = i1 - zeros;
    if (nonzeros > max_nonzeros) return max_nonzeros == 0 ? -1 : zeros + (n - i1);
  }
  return zeros;
}

}  // namespace

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kFc: return "fc";
    case Kind::kConv1x1: return "conv1x1";
    default: return "conv_im2col";
  }
}

const Calibration* calibration(Kind kind, BlockShape shape) {
  // The table of the SIMD target the kernels run with: AVX-512 has its own kernels (16-lane
  // tiles) and was measured apart; every other target uses the AVX2 machine's table. Asked
  // of the CPU directly (the features Highway's AVX3 target needs), not of the kernels:
  // the transforms compile this file without them (block=auto ranks shapes by it).
  static const bool avx512 = cpu_has_avx512();
  for (const Calibration& c : avx512 ? kTableAvx512 : kTableAvx2)
    if (c.kind == kind && c.shape == shape) return &c;
  return nullptr;
}

double break_even_sparsity(Kind kind, BlockShape shape) {
  const Calibration* c = calibration(kind, shape);
  if (!c) return 1.0;
  return std::clamp(c->break_even, kMinSparsity, 1.0);
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
  // The count stops early where it cannot reach the fewest zeros any shape's bound passes
  // with (dense weights: after 70 % of them at a 30 % break-even); the bound it returns then
  // declines every shape, as the exact count would.
  int64_t zeros = -2;  // -2: not counted (forced shape); -1: a nonzero element exists
  if (!forced.r && rows > 0 && cols > 0) {
    const int64_t n = rows * cols;
    double need = static_cast<double>(n);  // zero elements the most lenient shape's bound needs
    bool any_below_one = false;
    for (BlockShape s : kBlockShapes) {
      const double be = break_even_sparsity(kind, s);
      if (!shape_fits(s, rows, cols) || be >= 1.0) continue;
      any_below_one = true;
      const int64_t padded_rows = (rows + s.r - 1) / s.r * s.r;
      need = std::min(need, be * static_cast<double>(padded_rows * cols) - static_cast<double>((padded_rows - rows) * cols));
    }
    // Stopped after more than max nonzeros, the bound is at most need - 2 (one element's
    // margin against rounding in the comparison below).
    const int64_t max_nonzeros =
        !any_below_one ? 0 : need <= 1.0 ? n : std::min<int64_t>(n, static_cast<int64_t>(static_cast<double>(n) - need) + 1);
    zeros = count_zeros(w, n, max_nonzeros);
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
