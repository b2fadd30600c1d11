// The sparse micro-kernels: a plain reference and a SIMD version of each (Highway, dynamic
// dispatch: AVX-512 / AVX2 / SSE4 on x86, NEON / SVE / SVE2 on Arm, chosen at run time).
//
// Both kernels compute, for the block rows [rb0, rb1) of W (block row = shape.r rows):
//   y = W * x  (+ bias per output)  (+ beta * y when beta != 0; beta == 0 overwrites,
//   so y may hold garbage or NaN then).
// Outputs in the zero-padded rows beyond W.rows are never stored.
#pragma once

#include "sparse_matrix.h"

#include <limits>

namespace minnow {
namespace cpu_sparse {

// SpMM, "columns" form (1x1 and general convolution, FC with many rows via a transpose):
//   Y[n, j] = bias[n] + sum_k W[n, k] * X[k, j] + beta * Y[n, j],  j in [0, J).
// X is [W.cols, J] with row stride ldx (all W.cols * ldx floats readable); Y is [W.rows, J]
// with row stride ldy. SIMD runs along j, so W's nonzeros are read once per strip of
// columns. Give ldx >= J rounded up to spmm_lanes() (pad x) and the last partial vector of
// columns runs in SIMD too instead of scalar code: the small-spatial layers need that.
struct SpmmArgs {
  const float* x;
  int64_t ldx;
  int64_t J;
  const float* bias;  // [W.rows] or null
  float beta;
  float* y;
  int64_t ldy;
  // Every output clamped to [lo, hi] as it is written, after bias and beta (a fused Relu
  // or Clip, mn_kernel.fuse_clamp); the defaults clamp nothing.
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};
void spmm_ref(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1);
void spmm(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1);

// "Rows" form (fully connected with few rows, the LSTM gates):
//   Y[m, n] = bias[n] + sum_k W[n, k] * X[m, k] + beta * Y[m, n],  m in [m0, m1).
// X is [M, W.cols] with row stride ldx; Y is [M, W.rows] with row stride ldy. Each output
// is a sparse dot product (gathers for CSR, short vector loads for 1x4 / 1x8, a broadcast
// for 4x1).
struct RowsArgs {
  const float* x;
  int64_t ldx;
  int64_t m0, m1;
  const float* bias;  // [W.rows] or null
  float beta;
  float* y;
  int64_t ldy;
  float lo = -std::numeric_limits<float>::infinity();  // as SpmmArgs
  float hi = std::numeric_limits<float>::infinity();
};

// The scalar epilogue of both forms: acc (+ beta * y), clamped to [lo, hi].
inline float clamp_out(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }
// rows_ref works on block rows [rb0, rb1) of the blocked / CSR layout. rows() works on
// units [u0, u1) of rows_units(w): the row panels when w has them (add_row_panels), else
// block rows. Split parallel work over rows_units().
void rows_ref(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1);
void rows(const SparseMatrix& w, const RowsArgs& a, int64_t u0, int64_t u1);
// Reference for the row-panel layouts (plain and tiled): panels [p0, p1), one output at a
// time.
void rows_panels_ref(const SparseMatrix& w, const RowsArgs& a, int64_t p0, int64_t p1);
inline int64_t rows_units(const SparseMatrix& w) {
  return w.panels() > 0 ? w.panels() : w.block_rows();
}

// The width of the tiled panels the SIMD target the dispatcher picked has a kernel for
// (16 on AVX-512, 8 on AVX2: one vpermps per step), 0 where it has none (they would run
// the reference): what add_rows_layout is told to build.
int rows_tile_width();

// Floats per vector of the SIMD target the dispatcher picked (8 on AVX2, 4 on NEON).
int64_t spmm_lanes();

// Name of the SIMD target the dispatcher picked on this CPU ("AVX3_DL", "NEON", "SVE2" ...).
const char* simd_target_name();

}  // namespace cpu_sparse
}  // namespace minnow
