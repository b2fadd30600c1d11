// Convolution as packed GEMM (kernels/conv.h): tiled im2col into a KC x NC scratch block,
// or X read in place for 1x1 stride-1 convs; plus the direct reference.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>

#include "kernels/conv.h"

namespace minnow {
namespace cpu_dense {
namespace kernels {

namespace {

// KC: a 6 x KC panel of W (6 KB) stays in L1 and a KC x NC block of B (up to 128 KB with
// AVX2) in L2 while the micro-kernel sweeps it.
constexpr int64_t kMaxKC = 256;
constexpr int64_t kPanelsPerBlock = 8;  // NC = 8 * NR

// Row `kk` of the B block: B[k, p] for pixels p in [j0, j1), k = (c, kd, kh, kw) of group
// input channel base `xg`. Zeros where the tap falls into the padding.
void im2col_row(const ConvShape& s, const float* xg, int64_t k, int64_t j0, int64_t j1,
                float* dst) {
  const int64_t taps = s.taps();
  const int64_t c = k / taps, t = k % taps;
  const int64_t kw = t % s.k[2], kh = (t / s.k[2]) % s.k[1], kd = t / (s.k[2] * s.k[1]);
  const float* xc = xg + c * s.Pin();
  const int64_t OH = s.out[1], OW = s.out[2];
  const int64_t off = kw * s.d[2] - s.pb[2];
  // Output columns whose input column ow * s + off lies inside [0, in).
  const int64_t ow_lo = off >= 0 ? 0 : std::min(OW, (-off + s.s[2] - 1) / s.s[2]);
  const int64_t ow_hi =
      off > s.in[2] - 1 ? 0 : std::min(OW, (s.in[2] - 1 - off) / s.s[2] + 1);
  int64_t p = j0;
  while (p < j1) {
    const int64_t ow0 = p % OW, row = p / OW;
    const int64_t oh = row % OH, od = row / OH;
    const int64_t n = std::min(j1 - p, OW - ow0);  // this output row's part of the block
    float* o = dst + (p - j0);
    const int64_t id = od * s.s[0] - s.pb[0] + kd * s.d[0];
    const int64_t ih = oh * s.s[1] - s.pb[1] + kh * s.d[1];
    if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1] || ow_hi <= ow_lo) {
      std::memset(o, 0, size_t(n) * sizeof(float));
    } else {
      const float* xr = xc + (id * s.in[1] + ih) * s.in[2] + off;
      const int64_t a = std::max(ow0, ow_lo), b = std::min(ow0 + n, ow_hi);
      int64_t ow = ow0;
      for (; ow < a && ow < ow0 + n; ++ow) o[ow - ow0] = 0.0f;
      if (s.s[2] == 1) {
        if (b > a) std::memcpy(o + (a - ow0), xr + a, size_t(b - a) * sizeof(float));
        ow = std::max(ow, b);
      } else {
        for (; ow < b; ++ow) o[ow - ow0] = xr[ow * s.s[2]];
      }
      for (; ow < ow0 + n; ++ow) o[ow - ow0] = 0.0f;
    }
    p += n;
  }
}

}  // namespace

bool ConvShape::pointwise() const {
  for (int i = 0; i < 3; ++i)
    if (k[i] != 1 || s[i] != 1 || pb[i] != 0 || out[i] != in[i]) return false;
  return true;
}

ConvWeights pack_conv_weights(const float* w, int64_t M, int64_t K, int64_t group,
                              const float* bias) {
  ConvWeights cw;
  cw.M = M;
  cw.group = group;
  cw.K = K;
  const int64_t Mg = M / group;
  for (int64_t g = 0; g < group; ++g) cw.groups.push_back(pack_a(w + g * Mg * K, Mg, K, K));
  if (bias) {
    cw.bias = alloc_floats(size_t(M));
    std::memcpy(cw.bias.get(), bias, size_t(M) * sizeof(float));
  }
  return cw;
}

ConvPlan plan_conv(const ConvShape& s, int threads) {
  ConvPlan p;
  const int64_t nr = gemm_nr();
  const int64_t K = s.K(), P = s.P();
  p.nc = nr * kPanelsPerBlock;
  const int64_t kchunks = (K + kMaxKC - 1) / kMaxKC;
  p.kc = (K + kchunks - 1) / kchunks;
  p.col_blocks = (P + p.nc - 1) / p.nc;
  const int64_t panels = (s.Mg() + kGemmMR - 1) / kGemmMR;
  // With few column blocks (late, small feature maps) split the output channels too, so
  // every worker gets about four tasks.
  const int64_t outer = s.N * s.group * p.col_blocks;
  const int64_t want = threads > 1 ? 4 * int64_t(threads) : 1;
  p.m_chunks = outer >= want ? 1 : std::min(panels, (want + outer - 1) / outer);
  p.panels_per_chunk = (panels + p.m_chunks - 1) / p.m_chunks;
  p.m_chunks = (panels + p.panels_per_chunk - 1) / p.panels_per_chunk;
  p.tasks = outer * p.m_chunks;
  p.slot_floats = p.kc * p.nc;
  return p;
}

void conv_gemm_task(const ConvShape& s, const ConvWeights& w, const ConvPlan& p, int64_t t,
                    const float* x, float* y, float* slot, float lo, float hi) {
  const int64_t mc = t % p.m_chunks;
  const int64_t cb = (t / p.m_chunks) % p.col_blocks;
  const int64_t g = (t / (p.m_chunks * p.col_blocks)) % s.group;
  const int64_t n = t / (p.m_chunks * p.col_blocks * s.group);
  const int64_t K = s.K(), P = s.P(), Mg = s.Mg(), Cg = s.Cg();
  const int64_t nr = gemm_nr();
  const int64_t j0 = cb * p.nc, j1 = std::min(P, j0 + p.nc), cols = j1 - j0;
  const int64_t pi0 = mc * p.panels_per_chunk;
  const int64_t pi1 = std::min((Mg + kGemmMR - 1) / kGemmMR, pi0 + p.panels_per_chunk);
  const PackedA& a = w.groups[size_t(g)];
  const float* xg = x + (n * s.C + g * Cg) * s.Pin();
  float* yg = y + (n * s.M + g * Mg) * P;
  const bool direct = s.pointwise();
  // Read X in place only when every tile's NR columns lie inside the row.
  const bool in_place = direct && j0 + (cols + nr - 1) / nr * nr <= P;

  for (int64_t k0 = 0; k0 < K; k0 += p.kc) {
    const int64_t kc = std::min(p.kc, K - k0);
    const float* b;
    int64_t ldb;
    if (in_place) {
      b = xg + k0 * P + j0;
      ldb = P;
    } else {
      ldb = p.nc;
      for (int64_t kk = 0; kk < kc; ++kk) {
        float* dst = slot + kk * ldb;
        if (direct)
          std::memcpy(dst, xg + (k0 + kk) * P + j0, size_t(cols) * sizeof(float));
        else
          im2col_row(s, xg, k0 + kk, j0, j1, dst);
      }
      b = slot;
    }
    Epilogue e;
    e.bias_per_row = true;
    e.beta = k0 > 0 ? 1.0f : 0.0f;
    if (k0 + kc >= K) {
      e.lo = lo;
      e.hi = hi;
    }
    Tile tile;
    tile.K = kc;
    tile.a_rs = 1;
    tile.a_cs = kGemmMR;
    tile.ldb = ldb;
    tile.ldc = P;
    for (int64_t pi = pi0; pi < pi1; ++pi) {
      const int64_t i0 = pi * kGemmMR;
      tile.a = a.data.get() + pi * K * kGemmMR + k0 * kGemmMR;
      tile.mr = static_cast<int>(std::min<int64_t>(kGemmMR, Mg - i0));
      e.bias = (k0 == 0 && w.bias) ? w.bias.get() + g * Mg + i0 : nullptr;
      for (int64_t jq = 0; jq < cols; jq += nr) {
        tile.b = b + jq;
        tile.c = yg + i0 * P + j0 + jq;
        tile.nr = static_cast<int>(std::min(nr, cols - jq));
        gemm_tile(tile, e);
      }
    }
  }
}

void conv_ref(const ConvShape& s, const float* x, const float* w, const float* bias, float* y,
              float lo, float hi) {
  const int64_t Cg = s.Cg(), Mg = s.Mg(), taps = s.taps();
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.M; ++m) {
      const int64_t g = m / Mg;
      for (int64_t od = 0; od < s.out[0]; ++od)
        for (int64_t oh = 0; oh < s.out[1]; ++oh)
          for (int64_t ow = 0; ow < s.out[2]; ++ow) {
            double acc = bias ? bias[m] : 0.0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kd = 0; kd < s.k[0]; ++kd)
                for (int64_t kh = 0; kh < s.k[1]; ++kh)
                  for (int64_t kw = 0; kw < s.k[2]; ++kw) {
                    const int64_t id = od * s.s[0] - s.pb[0] + kd * s.d[0];
                    const int64_t ih = oh * s.s[1] - s.pb[1] + kh * s.d[1];
                    const int64_t iw = ow * s.s[2] - s.pb[2] + kw * s.d[2];
                    if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1] || iw < 0 ||
                        iw >= s.in[2])
                      continue;
                    const float xv =
                        x[(((n * s.C + g * Cg + c) * s.in[0] + id) * s.in[1] + ih) * s.in[2] + iw];
                    const float wv = w[(m * Cg + c) * taps + (kd * s.k[1] + kh) * s.k[2] + kw];
                    acc += double(xv) * wv;
                  }
            const float v = std::min(std::max(static_cast<float>(acc), lo), hi);
            y[(((n * s.M + m) * s.out[0] + od) * s.out[1] + oh) * s.out[2] + ow] = v;
          }
    }
}

void maxpool_ref(const ConvShape& s, const float* x, float* y) {
  for (int64_t pl = 0; pl < s.N * s.C; ++pl)
    for (int64_t oh = 0; oh < s.out[1]; ++oh)
      for (int64_t ow = 0; ow < s.out[2]; ++ow) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t kh = 0; kh < s.k[1]; ++kh)
          for (int64_t kw = 0; kw < s.k[2]; ++kw) {
            const int64_t ih = oh * s.s[1] - s.pb[1] + kh * s.d[1];
            const int64_t iw = ow * s.s[2] - s.pb[2] + kw * s.d[2];
            if (ih < 0 || ih >= s.in[1] || iw < 0 || iw >= s.in[2]) continue;
            const float v = x[(pl * s.in[1] + ih) * s.in[2] + iw];
            if (v > m || std::isnan(v)) m = v;
          }
        y[(pl * s.out[1] + oh) * s.out[2] + ow] = m;
      }
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
