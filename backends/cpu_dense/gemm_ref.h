// The reference matrix-multiply row loop shared by Gemm and MatMul.
#pragma once

#include <cstdint>

namespace minnow {
namespace cpu_dense {

// For rows i in [i0, i1): y[i*ldy + j] += alpha * sum_k A(i,k) * B(k,j), j in [0, N).
// A(i,k) = a[i*a_rs + k*a_cs] and B(k,j) = b[k*b_rs + j*b_cs], so transposes are just
// strides. The caller initialises y (zero, or beta*C).
//
// Two loop orders, chosen so the innermost loop is unit-stride: when B's rows are
// contiguous (b_cs == 1) each row of y accumulates scaled rows of B; when B is transposed
// (b_rs == 1) each y(i,j) is a dot product along k.
inline void gemm_rows_ref(int64_t i0, int64_t i1, int64_t N, int64_t K, float alpha, const float* a,
                          int64_t a_rs, int64_t a_cs, const float* b, int64_t b_rs, int64_t b_cs,
                          float* y, int64_t ldy) {
  for (int64_t i = i0; i < i1; ++i) {
    float* yr = y + i * ldy;
    const float* ar = a + i * a_rs;
    if (b_cs == 1) {
      for (int64_t k = 0; k < K; ++k) {
        const float av = alpha * ar[k * a_cs];
        const float* br = b + k * b_rs;
        for (int64_t j = 0; j < N; ++j) yr[j] += av * br[j];
      }
    } else {
      for (int64_t j = 0; j < N; ++j) {
        const float* bc = b + j * b_cs;
        float acc = 0.0f;
        for (int64_t k = 0; k < K; ++k) acc += ar[k * a_cs] * bc[k * b_rs];
        yr[j] += alpha * acc;
      }
    }
  }
}

}  // namespace cpu_dense
}  // namespace minnow
