// Reference kernels: the definition the SIMD kernels are tested against. Plain loops over
// the same packed layout, one output at a time, no tricks.
#include "kernels.h"

namespace minnow {
namespace cpu_sparse {

void spmm_ref(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  const int R = w.shape.r, C = w.shape.c;
  for (int64_t br = rb0; br < rb1; ++br) {
    for (int r = 0; r < R; ++r) {
      const int64_t n = br * R + r;
      if (n >= w.rows) break;
      float* yr = a.y + n * a.ldy;
      for (int64_t j = 0; j < a.J; ++j) {
        float acc = a.bias ? a.bias[n] : 0.0f;
        for (int32_t b = w.row_ptr[br]; b < w.row_ptr[br + 1]; ++b) {
          const float* wb = w.values.data() + static_cast<int64_t>(b) * R * C + r * C;
          for (int c = 0; c < C; ++c) acc += wb[c] * a.x[(w.col[b] + c) * a.ldx + j];
        }
        yr[j] = clamp_out(a.beta != 0.0f ? acc + a.beta * yr[j] : acc, a.lo, a.hi);
      }
    }
  }
}

void rows_ref(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  const int R = w.shape.r, C = w.shape.c;
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
    for (int64_t br = rb0; br < rb1; ++br) {
      for (int r = 0; r < R; ++r) {
        const int64_t n = br * R + r;
        if (n >= w.rows) break;
        float acc = a.bias ? a.bias[n] : 0.0f;
        for (int32_t b = w.row_ptr[br]; b < w.row_ptr[br + 1]; ++b) {
          const float* wb = w.values.data() + static_cast<int64_t>(b) * R * C + r * C;
          for (int c = 0; c < C; ++c) acc += wb[c] * xr[w.col[b] + c];
        }
        yr[n] = clamp_out(a.beta != 0.0f ? acc + a.beta * yr[n] : acc, a.lo, a.hi);
      }
    }
  }
}

void rows_panels_ref(const SparseMatrix& w, const RowsArgs& a, int64_t p0, int64_t p1) {
  const int P = w.panel_slots();
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
    for (int64_t p = p0; p < p1; ++p)
      for (int r = 0; r < P; ++r) {
        const int32_t n = w.panel_row[p * P + r];
        if (n < 0) continue;
        float acc = a.bias ? a.bias[n] : 0.0f;
        const int C = w.shape.c;
        for (int32_t t = w.panel_ptr[p]; t < w.panel_ptr[p + 1]; ++t) {
          if (w.tiled) {
            const float v = w.panel_val[t * P + r];
            const int64_t q = w.tile_xoff[t] + SparseMatrix::tile_lane(v, w.tile_width);
            const int64_t part = w.cols / w.tile_interleave;  // q's column before interleaving
            acc += v * xr[(q % part) * w.tile_interleave + q / part];
            continue;
          }
          for (int c = 0; c < C; ++c)
            acc += w.panel_val[(t * P + r) * C + c] * xr[w.panel_col[t * P + r] + c];
        }
        yr[n] = clamp_out(a.beta != 0.0f ? acc + a.beta * yr[n] : acc, a.lo, a.hi);
      }
  }
}

}  // namespace cpu_sparse
}  // namespace minnow
