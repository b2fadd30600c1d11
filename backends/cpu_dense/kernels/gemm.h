// The packed-panel GEMM of cpu_dense: one register-blocked SIMD micro-kernel (Highway,
// dynamic dispatch: AVX-512 / AVX2 / SSE4 on x86, NEON / SVE on Arm) and the packing and
// cache-blocking drivers around it. Plain C++ interface: no plugin ABI, no TBB, so the
// aarch64 test (scripts/arm64) builds these files alone.
//
// The micro-kernel computes an MR x NR tile, MR = 6 rows, NR = 2 SIMD vectors of columns
// (16 floats with AVX2, 8 with NEON/SSE4, 32 with AVX-512): 12 accumulators + 2 B vectors
// + 1 broadcast fit the 16 registers of AVX2. A is read through strides (packed panels or
// a plain row-major matrix), B as rows of at least NR readable floats (a packed panel, or
// the rows of a matrix when the whole tile lies inside it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

namespace minnow {
namespace cpu_dense {
namespace kernels {

constexpr int kGemmMR = 6;

// NR of the micro-kernel on the SIMD target this CPU dispatches to (2 vectors of floats).
int gemm_nr();
// Name of that target ("AVX2", "NEON", "SVE2" ...).
const char* simd_target_name();

// What happens to each finished output element:
//   v = acc + bias (+ beta * old C) (+ addend); v = min(max(v, lo), hi).
struct Epilogue {
  const float* bias = nullptr;  // null, or indexed by row or by column (see bias_per_row)
  bool bias_per_row = true;
  float beta = 0.0f;  // 0: C is overwritten (may hold garbage); else C is read
  // Null, or a tensor laid out as the tile's C (same ldc, never C's memory): a residual
  // Add fused into the producer (mn_kernel.fuse_add).
  const float* addend = nullptr;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

// One tile: C[i, j] (i < mr <= MR, j < nr <= NR) from
//   A(i, k) = a[i * a_rs + k * a_cs]   and   B(k, j) = b[k * ldb + j],  k < K.
// With nr <= NR / 2, mr may also be exactly 2 * MR (two row panels of strided A rows, W
// read in place): twelve FMA chains instead of six on a half panel (gemm_tile_rows).
// B rows must have NR readable floats even when nr < NR. With a per-column bias, `bias`
// must have NR readable floats from the tile's first column (packed bias is padded).
struct Tile {
  int64_t K;
  const float* a;
  int64_t a_rs, a_cs;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  int mr, nr;
  // Optional: pf_rows rows of K floats, a_rs apart from pf (the next row panel of W, read
  // in place), prefetched into L2 a cache line per row every 16 k as the tile runs (full
  // 6-row two-vector tiles; others ignore it), instead of in one burst before it.
  const float* pf = nullptr;
  int pf_rows = 0;
};
// The tile micro-kernel for this CPU, resolved once: the drivers fetch the pointer once
// per task and call it per tile (a wrapper that looked the target up in Highway's
// dispatch table on every tile was ~1 % of squeezenet1_1's samples).
using TileFn = void (*)(const Tile& t, const Epilogue& e);
// The rows of a tile of `cols` columns (panels of nr, gemm_nr(): the drivers' copy, not a
// dispatch per tile) with `rows_left` rows of strided A to go: two row panels where the
// tile is a half panel and both are there, else at most one.
inline int gemm_tile_rows(int cols, int64_t nr, int64_t rows_left) {
  if (2 * cols <= nr && rows_left >= 2 * kGemmMR) return 2 * kGemmMR;
  return static_cast<int>(rows_left < kGemmMR ? rows_left : kGemmMR);
}
TileFn gemm_tile_fn();
// The same tile with B's rows anywhere: B(k, j) = t.b[b_off[k] + j] (t.ldb unused), NR
// readable floats from each. Direct convolution (conv.h) reads them from the input's
// phase planes through a per-k offset table instead of an im2col copy. Resolved once, as
// gemm_tile_fn.
using TileIndirectFn = void (*)(const Tile& t, const int32_t* b_off, const Epilogue& e);
TileIndirectFn gemm_tile_indirect_fn();

// Tall tiles: up to kGemmTallRows rows x one vector of columns (NR / 2), A packed k-major
// in blocks of kGemmTallRows rows (pack_tall: block r at r * K * kGemmTallRows, then
// a[k * kGemmTallRows + i], rows past M zero), B and C as in Tile (t.a_rs and t.a_cs
// unused; t.nr <= NR / 2). Where M is 13-32 (squeeze and projection convs to 16-32
// channels) the 6-row tiles swept each B strip three to six times; tall tiles read it
// once or twice. Only where 16 accumulators, B and the broadcasts fit the registers
// (AVX-512's 32): gemm_tall_pays.
constexpr int kGemmTallRows = 16;
constexpr int kGemmTallMaxM = 32;
bool gemm_tall_available();
inline bool gemm_tall_pays(int64_t M) {
  const int64_t last = (M - 1) % kGemmTallRows + 1;  // rows of the last tall tile
  return last > 2 * kGemmMR && M <= kGemmTallMaxM && gemm_tall_available();
}
TileFn gemm_tall_tile_fn();  // resolved once, as gemm_tile_fn

// The last few columns of a GEMM whose column count is not a multiple of NR (7x7 maps:
// 49 = 3 * 16 + 1 pixels) as dot products along k instead of a mostly empty MR x NR
// tile: C[i, j] for i < rows, j < cols from A(i, k) = a[i * a_rs + k] (rows contiguous in
// k, as W read in place) and B(k, j) = bt[j * ldbt + k] (the columns, transposed).
// cols == 1: rows <= 8; cols == 2: rows <= 4 (8 accumulators either way). Bias per row.
struct DotTile {
  int64_t K;
  const float* a;
  int64_t a_rs;
  const float* bt;
  int64_t ldbt;
  float* c;
  int64_t ldc;
  int rows, cols;
};
constexpr int kDotMaxRows = 8;
void gemm_dot_tile(const DotTile& t, const Epilogue& e);
// Most columns that go as dot products rather than a tile (plan_conv's tails).
inline int64_t gemm_dot_tail_max(int64_t nr) { return nr / 4; }
// A last panel of `rem` (1..NR) columns a little over half full goes as the one-vector tile
// (NR / 2 columns) and this many dot columns (at most gemm_dot_tail_max); 0 otherwise.
// The im2col GEMM's tails (plan_conv) and Winograd's last panel (winograd_block_rows).
inline int64_t gemm_half_tail_dots(int64_t rem, int64_t nr) {
  return rem > nr / 2 && rem - nr / 2 <= gemm_dot_tail_max(nr) ? rem - nr / 2 : 0;
}
// `cols` dot columns over rows [r0, r1): pairs of columns kDotMaxRows / 2 rows at a time,
// a last single column kDotMaxRows rows at a time. dt holds K, a_rs, ldbt and ldc;
// at(j, i0, dt, e) points dt.a, dt.bt and dt.c at column j, row i0 (and may set the
// epilogue's per-row bias / addend) before each gemm_dot_tile.
template <class F>
void gemm_dot_columns(DotTile dt, Epilogue e, int64_t cols, int64_t r0, int64_t r1, F at) {
  for (int64_t j = 0; j < cols;) {
    dt.cols = cols - j >= 2 ? 2 : 1;
    const int64_t step = dt.cols == 2 ? kDotMaxRows / 2 : kDotMaxRows;
    for (int64_t i0 = r0; i0 < r1; i0 += step) {
      dt.rows = static_cast<int>(step < r1 - i0 ? step : r1 - i0);
      at(j, i0, dt, e);
      gemm_dot_tile(dt, e);
    }
    j += dt.cols;
  }
}

// 64-byte aligned float buffer.
struct AlignedFree {
  void operator()(float* p) const;
};
using FloatBuf = std::unique_ptr<float[], AlignedFree>;
// Zero-filled unless `zero` is false (for buffers the caller writes whole); throws
// std::bad_alloc.
FloatBuf alloc_floats(size_t n, bool zero = true);

// ---- Weights on the B side (Gemm, MatMul with a constant B, the matmul service) --------
// B'(k, j) = scale * b[k * b_rs + j * b_cs], packed into column panels of NR:
// data[q][k][0..NR), the last panel zero-padded. The column bias (if any) is padded too.
struct PackedB {
  int64_t K = 0, N = 0, nr = 0, panels = 0;
  FloatBuf data;
  FloatBuf bias;  // panels * nr, or null
};
PackedB pack_b(const float* b, int64_t K, int64_t N, int64_t b_rs, int64_t b_cs, float scale,
               const float* bias /* [N] or null */, float bias_scale = 1.0f);

// C[M, N] = A[M, K] * B' (+ bias, + beta * C, clamp) for rows [m0, m1) and column panels
// [q0, q1); A(i, k) = a[i * a_rs + k * a_cs], C row stride ldc. No scratch needed.
void gemm_packed_b(const PackedB& b, const float* a, int64_t a_rs, int64_t a_cs, float* c,
                   int64_t ldc, int64_t m0, int64_t m1, int64_t q0, int64_t q1, float beta,
                   float lo, float hi);

// ---- Weights on the A side (convolution: Y[Cout, pixels] = W[Cout, K] * im2col[K, pixels])
// A(i, k) = a[i * lda + k], packed into row panels of MR: data[p][k][0..MR), zero-padded.
struct PackedA {
  int64_t M = 0, K = 0, panels = 0;
  FloatBuf data;
};
PackedA pack_a(const float* a, int64_t M, int64_t K, int64_t lda);
// A(i, k) = a[i * K + k] k-major for the tall tiles: [M / kGemmTallRows][K][kGemmTallRows].
FloatBuf pack_tall(const float* a, int64_t M, int64_t K);

// Reference GEMM for the tests: C[i*ldc + j] = sum_k A(i,k) B(k,j) + epilogue, doubles.
void gemm_ref(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs, int64_t a_cs,
              const float* b, int64_t b_rs, int64_t b_cs, float* c, int64_t ldc,
              const Epilogue& e);

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
