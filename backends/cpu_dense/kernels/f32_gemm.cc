// Packing and the B-packed driver of kernels/gemm.h, plus the reference GEMM.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kernels/gemm.h"

namespace minnow {
namespace cpu_dense {
namespace kernels {

void AlignedFree::operator()(float* p) const { std::free(p); }

FloatBuf alloc_floats(size_t n, bool zero) {
  const size_t bytes = (std::max<size_t>(n, 1) * sizeof(float) + 63) / 64 * 64;
  // Buffers of 2 MiB and more (packed weights of big layers) start on a 2 MiB boundary and
  // ask for transparent huge pages for their whole 2 MiB pages: where THP is "madvise"
  // (Debian's default) each 4 KiB page otherwise costs a fault when first written, which
  // made most of resnet50's prepare time on a VM with slow faults. Nothing more is touched
  // than before. (From 4 MiB on before; the F(4x4, 3x3) weights of a 128-channel layer
  // are 2.4 MB: resnet18's prepare 28 -> 14 ms, resnet50's 32 -> 18 ms.)
  const size_t huge = size_t(2) << 20;
  const bool big = bytes >= huge;
  void* p = std::aligned_alloc(big ? huge : 64, big ? (bytes + huge - 1) / huge * huge : bytes);
  if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (big) (void)madvise(p, bytes / huge * huge, MADV_HUGEPAGE);  // a hint: failure changes nothing
#endif
  // Without `zero` the caller writes [0, n) (packing: each page is then touched once, not
  // zeroed first and written again); only the rounding tail is cleared.
  const size_t from = zero ? 0 : n * sizeof(float);
  std::memset(static_cast<char*>(p) + from, 0, bytes - from);
  return FloatBuf(static_cast<float*>(p));
}

PackedB pack_b(const float* b, int64_t K, int64_t N, int64_t b_rs, int64_t b_cs, float scale,
               const float* bias, float bias_scale) {
  PackedB p;
  p.K = K;
  p.N = N;
  p.nr = gemm_nr();
  p.panels = (N + p.nr - 1) / p.nr;
  p.data = alloc_floats(size_t(p.panels * p.nr) * size_t(K), /*zero=*/false);
  for (int64_t q = 0; q < p.panels; ++q) {
    float* dst = p.data.get() + q * K * p.nr;
    const int64_t j0 = q * p.nr, cols = std::min(p.nr, N - j0);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t jj = 0; jj < cols; ++jj)
        dst[k * p.nr + jj] = scale * b[k * b_rs + (j0 + jj) * b_cs];
      for (int64_t jj = cols; jj < p.nr; ++jj) dst[k * p.nr + jj] = 0.0f;
    }
  }
  if (bias) {
    p.bias = alloc_floats(size_t(p.panels * p.nr));
    for (int64_t j = 0; j < N; ++j) p.bias[j] = bias_scale * bias[j];
  }
  return p;
}

void gemm_packed_b(const PackedB& b, const float* a, int64_t a_rs, int64_t a_cs, float* c,
                   int64_t ldc, int64_t m0, int64_t m1, int64_t q0, int64_t q1, float beta,
                   float lo, float hi) {
  Epilogue e;
  e.bias_per_row = false;
  e.beta = beta;
  e.lo = lo;
  e.hi = hi;
  // Column panel outer: its K x NR floats stay in L1/L2 while the row blocks stream by.
  const TileFn tile_fn = gemm_tile_fn();
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t j0 = q * b.nr;
    e.bias = b.bias ? b.bias.get() + j0 : nullptr;
    Tile t;
    t.K = b.K;
    t.a_rs = a_rs;
    t.a_cs = a_cs;
    t.b = b.data.get() + q * b.K * b.nr;
    t.ldb = b.nr;
    t.ldc = ldc;
    t.nr = static_cast<int>(std::min(b.nr, b.N - j0));
    for (int64_t i = m0; i < m1; i += kGemmMR) {
      t.a = a + i * a_rs;
      t.c = c + i * ldc + j0;
      t.mr = static_cast<int>(std::min<int64_t>(kGemmMR, m1 - i));
      tile_fn(t, e);
    }
  }
}

PackedA pack_a(const float* a, int64_t M, int64_t K, int64_t lda) {
  PackedA p;
  p.M = M;
  p.K = K;
  p.panels = (M + kGemmMR - 1) / kGemmMR;
  p.data = alloc_floats(size_t(p.panels * kGemmMR) * size_t(K), /*zero=*/false);
  // Panel by panel, written in order (each output cache line once, no zero fill first):
  // the six source rows are read side by side, rows past M written as zeros.
  for (int64_t pi = 0; pi < p.panels; ++pi) {
    float* dst = p.data.get() + pi * K * kGemmMR;
    const float* src[kGemmMR];
    const int64_t rows = std::min<int64_t>(kGemmMR, M - pi * kGemmMR);
    for (int r = 0; r < rows; ++r) src[r] = a + (pi * kGemmMR + r) * lda;
    if (rows == kGemmMR) {
      for (int64_t k = 0; k < K; ++k)
        for (int r = 0; r < kGemmMR; ++r) dst[k * kGemmMR + r] = src[r][k];
    } else {
      for (int64_t k = 0; k < K; ++k)
        for (int r = 0; r < kGemmMR; ++r) dst[k * kGemmMR + r] = r < rows ? src[r][k] : 0.0f;
    }
  }
  return p;
}

FloatBuf pack_tall(const float* a, int64_t M, int64_t K) {
  const int64_t blocks = (M + kGemmTallRows - 1) / kGemmTallRows;
  FloatBuf t = alloc_floats(size_t(blocks * K) * kGemmTallRows);  // zeros: rows past M
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      t[size_t((i / kGemmTallRows * K + k) * kGemmTallRows + i % kGemmTallRows)] = a[i * K + k];
  return t;
}

void gemm_ref(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs, int64_t a_cs,
              const float* b, int64_t b_rs, int64_t b_cs, float* c, int64_t ldc,
              const Epilogue& e) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(a[i * a_rs + k * a_cs]) * b[k * b_rs + j * b_cs];
      if (e.bias) s += e.bias_per_row ? e.bias[i] : e.bias[j];
      if (e.beta != 0.0f) s += double(e.beta) * c[i * ldc + j];
      if (e.addend) s += double(e.addend[i * ldc + j]);
      c[i * ldc + j] = std::min(std::max(static_cast<float>(s), e.lo), e.hi);
    }
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
