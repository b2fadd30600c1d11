// f32_dwconv_direct and f32_maxpool_direct (kernels/conv.h): windowed kernels over one
// plane at a time, compiled per Highway target. Both read the same padded plane (zeros
// for convolution, -inf for max pooling).
//
// The input plane is copied into a zero-padded scratch plane whose columns are split by
// phase: padded column c = t * sw + ph goes to phase ph, index t. Output column ow of tap
// kw reads padded column ow * sw + kw * dw, i.e. phase (kw * dw) % sw at index
// ow + (kw * dw) / sw: for every stride a run of consecutive outputs reads consecutive
// floats, so each tap is one unaligned vector load and one FMA, with no bounds checks.
// The tail of a row (fewer than one vector) is computed in full into a stack buffer; the
// padded plane is wide enough that those loads stay inside it.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/f32_dwconv_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/lane_masks-inl.h"
#include "kernels/conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_dense {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

int64_t DwLanesImpl() { return static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>())); }

// Copies one input plane into the padded, phase-split scratch plane:
// row r, phase ph at slot[(r * sw + ph) * width + t] = X[r - pbh][t * sw + ph - pbw], or
// `fill` outside X. Stride 2 de-interleaves whole vectors with ConcatEven / ConcatOdd.
void BuildPlane(const ConvShape& s, const float* xp, float fill, float* slot) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const DwGeom g = dw_geom(s, L);
  const int64_t sw = s.s[2], IH = s.in[1], IW = s.in[2], pbh = s.pb[1], pbw = s.pb[2];
  for (int64_t r = 0; r < g.rows; ++r) {
    const int64_t ih = r - pbh;
    float* row = slot + r * sw * g.width;
    if (ih < 0 || ih >= IH) {
      std::fill(row, row + sw * g.width, fill);
      continue;
    }
    const float* xr = xp + ih * IW;
    for (int64_t ph = 0; ph < sw; ++ph) {
      float* dst = row + ph * g.width;
      // t with 0 <= t * sw + ph - pbw < IW
      // (no division for strides 1 and 2: this runs for every row of every plane)
      const int64_t lo_num = pbw - ph, hi_num = IW - 1 + pbw - ph;
      int64_t t_lo, t_hi;
      if (sw == 1) {
        t_lo = lo_num <= 0 ? 0 : lo_num;
        t_hi = hi_num < 0 ? 0 : hi_num + 1;
      } else if (sw == 2) {
        t_lo = lo_num <= 0 ? 0 : (lo_num + 1) >> 1;
        t_hi = hi_num < 0 ? 0 : (hi_num >> 1) + 1;
      } else {
        t_lo = lo_num <= 0 ? 0 : (lo_num + sw - 1) / sw;
        t_hi = hi_num < 0 ? 0 : hi_num / sw + 1;
      }
      t_lo = std::min(t_lo, g.width);
      t_hi = std::max(t_lo, std::min(t_hi, g.width));
      std::fill(dst, dst + t_lo, fill);
      int64_t t = t_lo;
      const float* src = xr + ph - pbw;  // dst[t] = src[t * sw]
      if (sw == 1) {
        // Rows are short for late layers (7-28 floats): a loop, not a memcpy call.
        for (; t < t_hi; ++t) dst[t] = src[t];
      }
#if HWY_TARGET != HWY_SCALAR
      else if (sw == 2) {
        for (; t + L <= t_hi && ph - pbw + 2 * (t + L) <= IW; t += L) {
          const auto a = hn::LoadU(d, src + 2 * t), b = hn::LoadU(d, src + 2 * t + L);
          hn::StoreU(hn::ConcatEven(d, b, a), d, dst + t);
        }
      }
#endif
      for (; t < t_hi; ++t) dst[t] = src[t * sw];
      std::fill(dst + t_hi, dst + g.width, fill);
    }
  }
}

// Stores n <= Lanes floats of v at p (a partial vector through tmp).
template <class D, class V>
HWY_INLINE void StoreClamped(D d, V v, float* p, int64_t n, float* tmp) {
  if (n == static_cast<int64_t>(hn::Lanes(d))) {
    hn::StoreU(v, d, p);
  } else {
    hn::Store(v, d, tmp);
    std::memcpy(p, tmp, size_t(n) * sizeof(float));
  }
}

// Each tap's offset in the padded, phase-split plane from a row's origin: tap t = kh * KW
// + kw reads phase (kw * dw) % sw of row kh * dh, index (kw * dw) / sw.
inline int64_t TapOffset(const ConvShape& s, const DwGeom& g, int64_t t) {
  const int64_t sw = s.s[2], c = (t % s.k[2]) * s.d[2];
  return ((t / s.k[2]) * s.d[1] * sw + c % sw) * g.width + c / sw;
}
// The offsets of all taps into off[kMaxTaps], computed once per plane (no divisions in the
// loops); false (nothing written) when there are more taps than that.
constexpr int64_t kMaxTaps = 64;
inline bool TapOffsets(const ConvShape& s, const DwGeom& g, int64_t* off) {
  const int64_t taps = s.k[1] * s.k[2];
  if (taps > kMaxTaps) return false;
  for (int64_t t = 0; t < taps; ++t) off[t] = TapOffset(s, g, t);
  return true;
}

// ---- Direct 3x3 depthwise on rows, stride 1 and 2 (AVX-512) -----------------------------
// 3x3, dilation 1, one pixel of zero padding before each axis (dwconv_rows_shape): each
// output vector reads its three input rows in place, at column offsets -1, 0, +1 (stride
// 2: the odd / even / odd lanes of two vector pairs), by masked loads at a row's two ends
// (AVX-512's do not fault on lanes masked off) and plain ones between; two output rows at a
// time share the input rows they both read, up to four vectors of a row at a time (eight
// independent FMA chains). No padded copy of the plane and no channel-block transposes
// (two thirds of the blocks' time at 56x56). Zen 4, one layer alone, input just written
// (61-101 runs; rows / channel blocks / padded planes): 144 x 56x56 174 / 267 / 512 us,
// 32 x 112x112 139 / 241 / 192, 192 x 28x28 58 / 68, stride 2 96 x 112 -> 56 245 / 281,
// 144 x 56 -> 28 79 / 89. In mobilenet_v2 the blocks stayed faster on 56- and 28-wide
// outputs (ConvPacked::use_dw_block): this replaces the padded planes only.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define MINNOW_DW_ROWS 1
// acc plus the three taps of kernel row kr (weights wk[3 kr ..]) on the vectors of input
// columns -1, 0, +1 from each output.
template <class V>
HWY_INLINE V KernelRow(const V* wk, int kr, V vl, V vc, V vr, V acc) {
  acc = hn::MulAdd(wk[3 * kr], vl, acc);
  acc = hn::MulAdd(wk[3 * kr + 1], vc, acc);
  return hn::MulAdd(wk[3 * kr + 2], vr, acc);
}
template <int NJ, class D, class V = hn::Vec<D>>
HWY_INLINE void Rows3x3Group(D d, const float* xp, int64_t H, int64_t W, int64_t oh, int64_t o0,
                             const V* wk, V vb, V vlo, V vhi, float* yrow, int64_t ys) {
  constexpr int64_t L = HWY_LANES(float);
  using M = hn::Mask<D>;
  M ml[NJ], mc[NJ], mr[NJ];
  bool inner[NJ];
  for (int q = 0; q < NJ; ++q) {
    const int64_t o = o0 + q * L;
    mc[q] = LanesInRow(d, o, W);
    mr[q] = LanesInRow(d, o + 1, W);
    ml[q] = LanesInRow(d, o - 1, W);
    inner[q] = o >= 1 && o + L + 1 <= W;  // reads columns o - 1 .. o + L, all inside the row
  }
  V a0[NJ], a1[NJ];
  for (int q = 0; q < NJ; ++q) a0[q] = a1[q] = vb;
  const bool two = oh + 1 < H;
  for (int r = 0; r < 4; ++r) {
    const int64_t ih = oh - 1 + r;  // input rows oh - 1 .. oh + 2
    if (ih < 0 || ih >= H || (r == 3 && !two)) continue;
    for (int q = 0; q < NJ; ++q) {
      const float* xr = xp + ih * W + o0 + q * L;
      V vl, vc, vr;
      if (inner[q]) {
        vl = hn::LoadU(d, xr - 1);
        vc = hn::LoadU(d, xr);
        vr = hn::LoadU(d, xr + 1);
      } else {
        vl = hn::MaskedLoad(ml[q], d, xr - 1);
        vc = hn::MaskedLoad(mc[q], d, xr);
        vr = hn::MaskedLoad(mr[q], d, xr + 1);
      }
      if (r < 3) a0[q] = KernelRow(wk, r, vl, vc, vr, a0[q]);      // output row oh
      if (r > 0) a1[q] = KernelRow(wk, r - 1, vl, vc, vr, a1[q]);  // output row oh + 1
    }
  }
  for (int q = 0; q < NJ; ++q) {
    float* yr = yrow + o0 + q * L;
    hn::BlendedStore(hn::Min(hn::Max(a0[q], vlo), vhi), mc[q], d, yr);
    if (two) hn::BlendedStore(hn::Min(hn::Max(a1[q], vlo), vhi), mc[q], d, yr + ys);
  }
}
// Stride 2: output column o + q reads input columns 2 (o + q) - 1, 2 (o + q), 2 (o + q) + 1,
// the odd, even and odd lanes of two vector pairs loaded at 2 o - 2 and 2 o (ConcatOdd /
// ConcatEven). Two output rows read five input rows, sharing the middle one.
template <int NJ, class D, class V = hn::Vec<D>>
HWY_INLINE void Rows3x3S2Group(D d, const float* xp, int64_t IH, int64_t IW, int64_t OH, int64_t OW,
                               int64_t oh, int64_t o0, const V* wk, V vb, V vlo, V vhi, float* yrow,
                               int64_t ys) {
  constexpr int64_t L = HWY_LANES(float);
  using M = hn::Mask<D>;
  M me0[NJ], me1[NJ], ml0[NJ], ml1[NJ], mo[NJ];
  bool inner[NJ];
  for (int q = 0; q < NJ; ++q) {
    const int64_t c = 2 * (o0 + q * L);  // input column of the first output's centre tap
    me0[q] = LanesInRow(d, c, IW);
    me1[q] = LanesInRow(d, c + L, IW);
    ml0[q] = LanesInRow(d, c - 2, IW);
    ml1[q] = LanesInRow(d, c - 2 + L, IW);
    mo[q] = LanesInRow(d, o0 + q * L, OW);
    inner[q] = c >= 2 && c + 2 * L <= IW;  // reads columns c - 2 .. c + 2 L - 1
  }
  V a0[NJ], a1[NJ];
  for (int q = 0; q < NJ; ++q) a0[q] = a1[q] = vb;
  const bool two = oh + 1 < OH;
  for (int r = 0; r < 5; ++r) {
    const int64_t ih = 2 * oh - 1 + r;  // output row oh: r 0..2; oh + 1: r 2..4
    if (ih < 0 || ih >= IH || (r > 2 && !two)) continue;
    for (int q = 0; q < NJ; ++q) {
      const float* xr = xp + ih * IW + 2 * (o0 + q * L);
      V e0, e1, l0, l1;
      if (inner[q]) {
        e0 = hn::LoadU(d, xr);
        e1 = hn::LoadU(d, xr + L);
        l0 = hn::LoadU(d, xr - 2);
        l1 = hn::LoadU(d, xr - 2 + L);
      } else {
        e0 = hn::MaskedLoad(me0[q], d, xr);
        e1 = hn::MaskedLoad(me1[q], d, xr + L);
        l0 = hn::MaskedLoad(ml0[q], d, xr - 2);
        l1 = hn::MaskedLoad(ml1[q], d, xr - 2 + L);
      }
      const V vc = hn::ConcatEven(d, e1, e0), vr = hn::ConcatOdd(d, e1, e0), vl = hn::ConcatOdd(d, l1, l0);
      if (r < 3) a0[q] = KernelRow(wk, r, vl, vc, vr, a0[q]);
      if (r >= 2) a1[q] = KernelRow(wk, r - 2, vl, vc, vr, a1[q]);
    }
  }
  for (int q = 0; q < NJ; ++q) {
    float* yr = yrow + o0 + q * L;
    hn::BlendedStore(hn::Min(hn::Max(a0[q], vlo), vhi), mo[q], d, yr);
    if (two) hn::BlendedStore(hn::Min(hn::Max(a1[q], vlo), vhi), mo[q], d, yr + ys);
  }
}
#endif

bool RowsImplApplies(const ConvShape& s) {
#ifdef MINNOW_DW_ROWS
  return dwconv_rows_shape(s);
#else
  (void)s;
  return false;
#endif
}

// Output rows [oh0, oh1) of one plane by Rows3x3Group (dwconv_rows_shape; AVX-512 only),
// row oh at yp + (oh - oh0) * ys. oh0 even; oh1 even or the last row's end (the groups
// write two rows at a time).
void Rows3x3Rows(const ConvShape& s, int64_t plane, int64_t oh0, int64_t oh1, const float* x, const float* w,
                 const float* bias, float* yp, int64_t ys, float lo, float hi) {
#ifdef MINNOW_DW_ROWS
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  constexpr int64_t L = HWY_LANES(float);
  const int64_t IH = s.in[1], IW = s.in[2], OH = s.out[1], OW = s.out[2];
  const int64_t m = plane % s.M, n = plane / s.M;
  const float* xp = x + (n * s.C + m / s.Mg()) * IH * IW;
  V wk[9];
  for (int t = 0; t < 9; ++t) wk[t] = hn::Set(d, w[m * 9 + t]);
  const V vb = hn::Set(d, bias ? bias[m] : 0.0f), vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  const int64_t nv = (OW + L - 1) / L;
  const bool s2 = s.s[2] == 2;
  for (int64_t oh = oh0; oh < oh1; oh += 2) {
    int64_t j = 0;
    float* yr = yp + (oh - oh0) * ys;
#define MINNOW_DW_ROWS_GROUP(NJ)                                                                 \
  (s2 ? Rows3x3S2Group<NJ>(d, xp, IH, IW, OH, OW, oh, j * L, wk, vb, vlo, vhi, yr, ys)           \
      : Rows3x3Group<NJ>(d, xp, IH, IW, oh, j * L, wk, vb, vlo, vhi, yr, ys))
    for (; j + 4 <= nv; j += 4) MINNOW_DW_ROWS_GROUP(4);
    switch (nv - j) {
      case 3: MINNOW_DW_ROWS_GROUP(3); break;
      case 2: MINNOW_DW_ROWS_GROUP(2); break;
      case 1: MINNOW_DW_ROWS_GROUP(1); break;
      default: break;
    }
#undef MINNOW_DW_ROWS_GROUP
  }
#else
  (void)s, (void)plane, (void)oh0, (void)oh1, (void)x, (void)w, (void)bias, (void)yp, (void)ys, (void)lo, (void)hi;
#endif
}
#undef MINNOW_DW_ROWS

void RowsImpl(const ConvShape& s, int64_t plane, int64_t oh0, int64_t oh1, const float* x, const float* w,
              const float* bias, float* y, int64_t ys, float lo, float hi) {
  Rows3x3Rows(s, plane, oh0, oh1, x, w, bias, y, ys, lo, hi);
}

void PlaneImpl(const ConvShape& s, int64_t plane, const float* x, const float* w,
               const float* bias, float* y, float* slot, float lo, float hi) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const DwGeom g = dw_geom(s, L);
  const int64_t sw = s.s[2], sh = s.s[1], dw = s.d[2], dh = s.d[1];
  const int64_t KH = s.k[1], KW = s.k[2];
  const int64_t IH = s.in[1], IW = s.in[2], OH = s.out[1], OW = s.out[2];
  const int64_t m = plane % s.M, n = plane / s.M;
  const int64_t ic = m / s.Mg();  // Cg == 1: group index == input channel
  const float* xp = x + (n * s.C + ic) * IH * IW;
  const float* wp = w + m * KH * KW;
  float* yp = y + plane * OH * OW;
  if (RowsImplApplies(s)) return Rows3x3Rows(s, plane, 0, OH, x, w, bias, yp, OW, lo, hi);

  BuildPlane(s, xp, 0.0f, slot);

  const V vb = hn::Set(d, bias ? bias[m] : 0.0f);
  const V vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  HWY_ALIGN float tmp[(HWY_MAX_BYTES / sizeof(float))];
  // Tap offsets from a table (more taps than it holds are computed inline).
  int64_t off[kMaxTaps];
  const int64_t taps = KH * KW;
  const bool table = TapOffsets(s, g, off);
  const int64_t row_step = sh * sw * g.width;  // padded floats between output rows
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* yr = yp + oh * OW;
    const float* base = slot + oh * row_step;
    int64_t ow = 0;
    if (table && OW < 4 * L && oh + 4 <= OH) {
      // Narrow planes (14x14, 7x7): four output rows at a time instead.
      for (; ow < OW; ow += L) {
        V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
        for (int64_t t = 0; t < taps; ++t) {
          const float* src = base + off[t] + ow;
          const V wv = hn::Set(d, wp[t]);
          a0 = hn::MulAdd(wv, hn::LoadU(d, src), a0);
          a1 = hn::MulAdd(wv, hn::LoadU(d, src + row_step), a1);
          a2 = hn::MulAdd(wv, hn::LoadU(d, src + 2 * row_step), a2);
          a3 = hn::MulAdd(wv, hn::LoadU(d, src + 3 * row_step), a3);
        }
        const int64_t n = std::min(L, OW - ow);
        StoreClamped(d, hn::Min(hn::Max(a0, vlo), vhi), yr + ow, n, tmp);
        StoreClamped(d, hn::Min(hn::Max(a1, vlo), vhi), yr + OW + ow, n, tmp);
        StoreClamped(d, hn::Min(hn::Max(a2, vlo), vhi), yr + 2 * OW + ow, n, tmp);
        StoreClamped(d, hn::Min(hn::Max(a3, vlo), vhi), yr + 3 * OW + ow, n, tmp);
      }
      oh += 3;
      continue;
    }
    if (table) {
      // Four vectors of outputs at a time: four independent FMA chains hide the latency.
      // The last group may end in a partial vector (the padded plane is as wide as the
      // row rounded up to whole vectors, so its loads stay inside).
      for (; ow + 3 * L < OW; ow += 4 * L) {
        V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
        for (int64_t t = 0; t < taps; ++t) {
          const float* src = base + off[t] + ow;
          const V wv = hn::Set(d, wp[t]);
          a0 = hn::MulAdd(wv, hn::LoadU(d, src), a0);
          a1 = hn::MulAdd(wv, hn::LoadU(d, src + L), a1);
          a2 = hn::MulAdd(wv, hn::LoadU(d, src + 2 * L), a2);
          a3 = hn::MulAdd(wv, hn::LoadU(d, src + 3 * L), a3);
        }
        hn::StoreU(hn::Min(hn::Max(a0, vlo), vhi), d, yr + ow);
        hn::StoreU(hn::Min(hn::Max(a1, vlo), vhi), d, yr + ow + L);
        hn::StoreU(hn::Min(hn::Max(a2, vlo), vhi), d, yr + ow + 2 * L);
        StoreClamped(d, hn::Min(hn::Max(a3, vlo), vhi), yr + ow + 3 * L, std::min(L, OW - ow - 3 * L), tmp);
      }
    }
    if (table && OW - ow > L) {
      // The row's last two or three vectors (the last one possibly partial) together: one
      // at a time, each waited on its FMA chain (taps x the FMA latency per vector), and on
      // 56- and 112-wide rows those tails were most of the row's time.
      const int64_t rem = OW - ow, nv = (rem + L - 1) / L;  // 2 or 3 (rem <= 3 L)
      V a0 = vb, a1 = vb, a2 = vb;
      if (nv == 3) {
        for (int64_t t = 0; t < taps; ++t) {
          const float* src = base + off[t] + ow;
          const V wv = hn::Set(d, wp[t]);
          a0 = hn::MulAdd(wv, hn::LoadU(d, src), a0);
          a1 = hn::MulAdd(wv, hn::LoadU(d, src + L), a1);
          a2 = hn::MulAdd(wv, hn::LoadU(d, src + 2 * L), a2);
        }
      } else {
        for (int64_t t = 0; t < taps; ++t) {
          const float* src = base + off[t] + ow;
          const V wv = hn::Set(d, wp[t]);
          a0 = hn::MulAdd(wv, hn::LoadU(d, src), a0);
          a1 = hn::MulAdd(wv, hn::LoadU(d, src + L), a1);
        }
      }
      hn::StoreU(hn::Min(hn::Max(a0, vlo), vhi), d, yr + ow);
      StoreClamped(d, hn::Min(hn::Max(a1, vlo), vhi), yr + ow + L, std::min(L, rem - L), tmp);
      if (nv > 2) StoreClamped(d, hn::Min(hn::Max(a2, vlo), vhi), yr + ow + 2 * L, std::min(L, rem - 2 * L), tmp);
      continue;
    }
    for (; ow < OW; ow += L) {
      V acc = vb;
      if (table) {
        for (int64_t t = 0; t < taps; ++t)
          acc = hn::MulAdd(hn::Set(d, wp[t]), hn::LoadU(d, base + off[t] + ow), acc);
      } else {
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t c = kw * dw;
            const float* src = base + (kh * dh * sw + c % sw) * g.width + c / sw + ow;
            acc = hn::MulAdd(hn::Set(d, wp[kh * KW + kw]), hn::LoadU(d, src), acc);
          }
      }
      acc = hn::Min(hn::Max(acc, vlo), vhi);
      if (ow + L <= OW) {
        hn::StoreU(acc, d, yr + ow);
      } else {
        hn::Store(acc, d, tmp);
        std::memcpy(yr + ow, tmp, size_t(OW - ow) * sizeof(float));
      }
    }
  }
}

// ---- Channel-blocked depthwise (small planes) -----------------------------------------
// A 7x7 or 14x14 plane is one or two vectors a row, most of a vector idle at 7 wide (16
// lanes), and a plane's fixed work (the padded copy, the calls) is as large as its
// multiply-adds. Here the lanes are L consecutive channels instead: their inputs are
// gathered into a padded [rows][cols][L] block (one gather of L channels per pixel), each
// output pixel is taps multiply-adds of whole vectors (four pixels at a time, every lane
// used), and the outputs go back to planes by gathers of L pixels of one channel.


// A block is processed in chunks of `chunk` output rows: the padded input rows a chunk
// reads (in_rows of them) are built, its outputs computed and written back, all within
// L1. Built whole, a 56x56 block's input was 0.2 MB and a 112x112 one's 0.8 MB: written
// out to L2 and read back for the taps, and the output block the same again; planes were
// faster there. A chunk covers at least kDwChunkPixels outputs, rounded up to whole
// vectors of pixels when that stays small (the write-back then needs no gathers).
constexpr int64_t kDwChunkPixels = 128;
struct DwBlockGeom {
  int64_t chunk, in_rows, cols, in_floats, out_floats;
};
inline DwBlockGeom dw_block_geom(const ConvShape& s, int64_t L) {
  DwBlockGeom g;
  const int64_t OH = s.out[1], OW = s.out[2];
  int64_t rows = std::min(OH, (kDwChunkPixels + OW - 1) / OW);
  const int64_t whole = L / std::gcd(OW, L);  // rows whose pixels make whole vectors
  const int64_t rounded = (rows + whole - 1) / whole * whole;
  if (rounded * OW <= 4 * kDwChunkPixels) rows = rounded;
  g.chunk = std::min(OH, rows);
  g.in_rows = (g.chunk - 1) * s.s[1] + (s.k[1] - 1) * s.d[1] + 1;
  g.cols = (s.out[2] - 1) * s.s[2] + (s.k[2] - 1) * s.d[2] + 1;
  g.in_floats = g.in_rows * g.cols * L;
  // outputs rounded up to whole vectors of pixels, so the write-back gathers stay inside
  g.out_floats = (g.chunk * OW + L - 1) / L * L * L;
  return g;
}

int64_t DwBlockSlotFloatsImpl(const ConvShape& s) {
  const DwBlockGeom g = dw_block_geom(s, static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>())));
  return g.in_floats + g.out_floats;
}

// Channel blocks are built and written back by transposing L x L tiles in registers where
// the target has fixed 4-, 8- or 16-lane vectors (SSE4 / NEON, AVX2, AVX-512): L loads,
// 2-4 rounds of shuffles, L stores, instead of one gather per pixel, which on the Zen 3
// cost more than the block's arithmetic (mobilenet_v2's 7x7 and 14x14 depthwise layers).
// On the Xeon (AVX-512, one layer alone, 31 alternating runs) 16 x 16 transposes against
// gathers: depthwise 144 x 56 -> 28 175 vs 241 us, 192 x 28x28 122 vs 152, 384 x 14x14 74
// vs 84; max pooling 64 x 111 -> 55 347 vs 483, 128 x 55 -> 27 166 vs 207. Rows narrower
// than L (7x7 maps; 14x14 with 16 lanes) take one partial tile of masked loads where they
// cannot fault (AVX2, AVX-512); gathered, they cost Zen 4 (AVX-512, `minnow bench
// --profile`, medians) mobilenet_v2's 7x7 depthwise layers 72-96 against 35-58 us now,
// 14x14 84-139 against 40-90. SVE and scalar targets gather.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define MINNOW_DW_TRANSPOSE 1
#define MINNOW_DW_MASKED_TILE 1  // loads masked off past n do not fault
// Transposes the 16 x 16 floats whose rows start at src + i * ss into rows at dst + j * ds:
// interleaves of pairs and quads within each 128-bit lane, then two rounds of 128-bit lane
// shuffles (AVX-512 intrinsics: Highway 1.0 has no two-vector 128-bit lane shuffle).
// With n < 16, only the first n floats of each source row are read (masked loads, which
// do not fault past them) and only the first n destination rows written.
HWY_INLINE void TransposeTile(const float* src, int64_t ss, float* dst, int64_t ds, int n = 16) {
  __m512 r[16], t[16];
  if (n >= 16) {
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * ss);
  } else {
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    for (int i = 0; i < 16; ++i) r[i] = _mm512_maskz_loadu_ps(m, src + i * ss);
  }
  // t[2i], t[2i + 1]: rows 2i and 2i + 1 interleaved by float.
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // r[4i + j]: 128-bit lane l holds column 4l + j of rows 4i .. 4i + 3.
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  // 0x88 takes 128-bit lanes 0, 2 of each source, 0xDD lanes 1, 3: t[j] holds columns j
  // and 8 + j of rows 0-7, t[4 + j] columns 4 + j and 12 + j; t[8 + j], t[12 + j] the same
  // of rows 8-15.
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
    t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
  }
  for (int j = 0; j < 4; ++j) {
    if (j < n) _mm512_storeu_ps(dst + j * ds, _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88));
    if (8 + j < n) _mm512_storeu_ps(dst + (8 + j) * ds, _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD));
    if (4 + j < n) _mm512_storeu_ps(dst + (4 + j) * ds, _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88));
    if (12 + j < n) _mm512_storeu_ps(dst + (12 + j) * ds, _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xDD));
  }
}
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3 || HWY_TARGET == HWY_NEON
#define MINNOW_DW_TRANSPOSE 1
#if HWY_TARGET == HWY_AVX2
#define MINNOW_DW_MASKED_TILE 1  // vmaskmovps: loads masked off do not fault (SSE4 / NEON's do)
#endif
// Transposes the L x L floats whose rows start at src + i * ss into rows at dst + j * ds;
// with n < L only the first n floats of each source row are read (masked loads) and only
// the first n destination rows written (n < L only where MINNOW_DW_MASKED_TILE).
HWY_INLINE void TransposeTile(const float* src, int64_t ss, float* dst, int64_t ds, int n = HWY_LANES(float)) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto m = hn::FirstN(d, static_cast<size_t>(std::min<int64_t>(n, L)));
  auto load = [&](const float* p) { return n >= L ? hn::LoadU(d, p) : hn::MaskedLoad(m, d, p); };
  auto store = [&](hn::Vec<decltype(d)> v, int j) {
    if (j < n) hn::StoreU(v, d, dst + j * ds);
  };
  const hn::Repartition<double, decltype(d)> dd;
  auto lo64 = [&](hn::Vec<decltype(d)> a, hn::Vec<decltype(d)> b) {
    return hn::BitCast(d, hn::InterleaveLower(dd, hn::BitCast(dd, a), hn::BitCast(dd, b)));
  };
  auto hi64 = [&](hn::Vec<decltype(d)> a, hn::Vec<decltype(d)> b) {
    return hn::BitCast(d, hn::InterleaveUpper(dd, hn::BitCast(dd, a), hn::BitCast(dd, b)));
  };
#if HWY_TARGET == HWY_AVX2
  const auto r0 = load(src), r1 = load(src + ss), r2 = load(src + 2 * ss);
  const auto r3 = load(src + 3 * ss), r4 = load(src + 4 * ss), r5 = load(src + 5 * ss);
  const auto r6 = load(src + 6 * ss), r7 = load(src + 7 * ss);
  // Within each 128-bit half: pairs, then quads of rows; then the halves swap.
  const auto t0 = hn::InterleaveLower(d, r0, r1), t1 = hn::InterleaveUpper(d, r0, r1);
  const auto t2 = hn::InterleaveLower(d, r2, r3), t3 = hn::InterleaveUpper(d, r2, r3);
  const auto t4 = hn::InterleaveLower(d, r4, r5), t5 = hn::InterleaveUpper(d, r4, r5);
  const auto t6 = hn::InterleaveLower(d, r6, r7), t7 = hn::InterleaveUpper(d, r6, r7);
  const auto u0 = lo64(t0, t2), u1 = hi64(t0, t2), u2 = lo64(t1, t3), u3 = hi64(t1, t3);
  const auto u4 = lo64(t4, t6), u5 = hi64(t4, t6), u6 = lo64(t5, t7), u7 = hi64(t5, t7);
  store(hn::ConcatLowerLower(d, u4, u0), 0);
  store(hn::ConcatLowerLower(d, u5, u1), 1);
  store(hn::ConcatLowerLower(d, u6, u2), 2);
  store(hn::ConcatLowerLower(d, u7, u3), 3);
  store(hn::ConcatUpperUpper(d, u4, u0), 4);
  store(hn::ConcatUpperUpper(d, u5, u1), 5);
  store(hn::ConcatUpperUpper(d, u6, u2), 6);
  store(hn::ConcatUpperUpper(d, u7, u3), 7);
#else
  const auto r0 = load(src), r1 = load(src + ss);
  const auto r2 = load(src + 2 * ss), r3 = load(src + 3 * ss);
  const auto t0 = hn::InterleaveLower(d, r0, r1), t1 = hn::InterleaveUpper(d, r0, r1);
  const auto t2 = hn::InterleaveLower(d, r2, r3), t3 = hn::InterleaveUpper(d, r2, r3);
  store(lo64(t0, t2), 0);
  store(hi64(t0, t2), 1);
  store(lo64(t1, t3), 2);
  store(hi64(t1, t3), 3);
#endif
}
#endif

// Gathers padded rows [r0, r0 + rows) of the L planes at xp (IH x IW each) into the
// channel-blocked rows xin[((r - r0) * cols + c) * L + l], `fill` outside the input.
void GatherBlockIn(const ConvShape& s, const DwBlockGeom& g, const float* xp, float fill, int64_t r0,
                   int64_t rows, float* xin) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t IH = s.in[1], IW = s.in[2], pbh = s.pb[1], pbw = s.pb[2];
  const auto plane_idx = hn::Mul(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(IH * IW)));
  const auto vfill = hn::Set(d, fill);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ih = r0 + r - pbh;
    float* row = xin + r * g.cols * L;
    if (ih < 0 || ih >= IH) {
      std::fill(row, row + g.cols * L, fill);
      continue;
    }
    int64_t c = 0;
#ifdef MINNOW_DW_TRANSPOSE
    // Padding on the left, then whole L-column runs of the input row transposed.
    for (; c < g.cols && c < pbw; ++c) hn::StoreU(vfill, d, row + c * L);
    for (; c + L <= g.cols && c - pbw + L <= IW; c += L)
      TransposeTile(xp + ih * IW + (c - pbw), IH * IW, row + c * L, L);
    // The row's last input columns: one more tile ending at the last column, overlapping
    // the one before (gathers of the tail cost more than the whole row's transposes).
    if (c - pbw < IW && IW >= L && IW + pbw <= g.cols) {
      TransposeTile(xp + ih * IW + (IW - L), IH * IW, row + (IW - L + pbw) * L, L);
      c = IW + pbw;
    }
#ifdef MINNOW_DW_MASKED_TILE
    // Rows narrower than a vector (7x7 and, with 16 lanes, 14x14 maps): one partial tile.
    if (c == pbw && IW < L && IW + pbw <= g.cols) {
      TransposeTile(xp + ih * IW, IH * IW, row + c * L, L, static_cast<int>(IW));
      c = IW + pbw;
    }
#endif
#endif
    for (; c < g.cols; ++c) {
      const int64_t iw = c - pbw;
      const auto v = iw < 0 || iw >= IW ? vfill : hn::GatherIndex(d, xp + ih * IW + iw, plane_idx);
      hn::StoreU(v, d, row + c * L);
    }
  }
}

// Writes n channel-blocked outputs yout[q * L + l] (q < n, rounded up to whole vectors)
// back to the L planes at yp (P floats apart), L pixels of one channel per gather.
void GatherBlockOut(const float* yout, int64_t n, int64_t P, float* yp) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t q0 = 0;
#ifdef MINNOW_DW_TRANSPOSE
  for (; q0 + L <= n; q0 += L) TransposeTile(yout + q0 * L, L, yp + q0, P);
  if (q0 < n && n >= L) {  // the last pixels: a tile overlapping the one before
    TransposeTile(yout + (n - L) * L, L, yp + (n - L), P);
    q0 = n;
  }
#endif
  if (q0 == n) return;
  const auto pixel_idx = hn::Mul(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(L)));
  HWY_ALIGN float tmp[HWY_MAX_BYTES / sizeof(float)];
  for (int64_t l = 0; l < L; ++l) {
    float* yl = yp + l * P;
    for (int64_t q = q0; q < n; q += L)
      StoreClamped(d, hn::GatherIndex(d, yout + q * L + l, pixel_idx), yl + q, std::min(L, n - q), tmp);
  }
}
bool TransposesImpl() {
#ifdef MINNOW_DW_TRANSPOSE
  return true;
#else
  return false;
#endif
}
#undef MINNOW_DW_TRANSPOSE
#undef MINNOW_DW_MASKED_TILE

// The taps of channel block c0 (one vector per tap: wv[t * L + l] = w[(c0 + l) * taps + t])
// and their offsets in a chunk's padded rows of g.cols pixels.
template <class D>
HWY_INLINE void BlockTaps(D d, const ConvShape& s, const DwBlockGeom& g, const float* w, int64_t c0,
                          float* wv, int64_t* off) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t KW = s.k[2], taps = s.k[1] * KW;
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t l = 0; l < L; ++l) wv[t * L + l] = w[(c0 + l) * taps + t];
    off[t] = ((t / KW) * s.d[1] * g.cols + (t % KW) * s.d[2]) * L;
  }
}

// Output rows [oh0, oh1) of one channel block from its padded input rows xin (the first
// is padded row oh0 * stride) into yout[p * L + l], p = (row - oh0) * OW + column.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void BlockChunk(D d, const ConvShape& s, const DwBlockGeom& g, const float* xin, const float* wv,
                           const int64_t* off, V vb, V vlo, V vhi, int64_t oh0, int64_t oh1, float* yout) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t OW = s.out[2], taps = s.k[1] * s.k[2];
  const int64_t px = s.s[2] * L;  // floats between neighbouring output pixels' windows
  // The chunk's output pixels as one run, p = (row - oh0) * OW + column, eight at a time:
  // eight independent chains of taps FMAs (four left the FMA units waiting on latency),
  // groups running on across rows. Row by row, a 7- or 14-wide row ended in pixels one
  // chain at a time (taps x the FMA latency each).
  const int64_t npx = (oh1 - oh0) * OW, row_step = s.s[1] * g.cols * L;
  int64_t p = 0, r = 0, c = 0;  // (r, c): pixel p's row in the chunk and column
  auto next_src = [&]() {
    const float* src = xin + r * row_step + c * px;
    if (++c == OW) c = 0, ++r;
    return src;
  };
  for (; p + 8 <= npx; p += 8) {
    const float *s0 = next_src(), *s1 = next_src(), *s2 = next_src(), *s3 = next_src();
    const float *s4 = next_src(), *s5 = next_src(), *s6 = next_src(), *s7 = next_src();
    V a0 = vb, a1 = vb, a2 = vb, a3 = vb, a4 = vb, a5 = vb, a6 = vb, a7 = vb;
    for (int64_t t = 0; t < taps; ++t) {
      const V wt = hn::Load(d, wv + t * L);
      const int64_t o = off[t];
      a0 = hn::MulAdd(wt, hn::LoadU(d, s0 + o), a0);
      a1 = hn::MulAdd(wt, hn::LoadU(d, s1 + o), a1);
      a2 = hn::MulAdd(wt, hn::LoadU(d, s2 + o), a2);
      a3 = hn::MulAdd(wt, hn::LoadU(d, s3 + o), a3);
      a4 = hn::MulAdd(wt, hn::LoadU(d, s4 + o), a4);
      a5 = hn::MulAdd(wt, hn::LoadU(d, s5 + o), a5);
      a6 = hn::MulAdd(wt, hn::LoadU(d, s6 + o), a6);
      a7 = hn::MulAdd(wt, hn::LoadU(d, s7 + o), a7);
    }
    float* out = yout + p * L;
    hn::StoreU(hn::Min(hn::Max(a0, vlo), vhi), d, out);
    hn::StoreU(hn::Min(hn::Max(a1, vlo), vhi), d, out + L);
    hn::StoreU(hn::Min(hn::Max(a2, vlo), vhi), d, out + 2 * L);
    hn::StoreU(hn::Min(hn::Max(a3, vlo), vhi), d, out + 3 * L);
    hn::StoreU(hn::Min(hn::Max(a4, vlo), vhi), d, out + 4 * L);
    hn::StoreU(hn::Min(hn::Max(a5, vlo), vhi), d, out + 5 * L);
    hn::StoreU(hn::Min(hn::Max(a6, vlo), vhi), d, out + 6 * L);
    hn::StoreU(hn::Min(hn::Max(a7, vlo), vhi), d, out + 7 * L);
  }
  for (; p + 4 <= npx; p += 4) {  // four pixels: four independent chains
    const float *s0 = next_src(), *s1 = next_src(), *s2 = next_src(), *s3 = next_src();
    V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
    for (int64_t t = 0; t < taps; ++t) {
      const V wt = hn::Load(d, wv + t * L);
      const int64_t o = off[t];
      a0 = hn::MulAdd(wt, hn::LoadU(d, s0 + o), a0);
      a1 = hn::MulAdd(wt, hn::LoadU(d, s1 + o), a1);
      a2 = hn::MulAdd(wt, hn::LoadU(d, s2 + o), a2);
      a3 = hn::MulAdd(wt, hn::LoadU(d, s3 + o), a3);
    }
    float* out = yout + p * L;
    hn::StoreU(hn::Min(hn::Max(a0, vlo), vhi), d, out);
    hn::StoreU(hn::Min(hn::Max(a1, vlo), vhi), d, out + L);
    hn::StoreU(hn::Min(hn::Max(a2, vlo), vhi), d, out + 2 * L);
    hn::StoreU(hn::Min(hn::Max(a3, vlo), vhi), d, out + 3 * L);
  }
  for (; p < npx; ++p) {
    const float* src = next_src();
    V a0 = vb;
    for (int64_t t = 0; t < taps; ++t) a0 = hn::MulAdd(hn::Load(d, wv + t * L), hn::LoadU(d, src + off[t]), a0);
    hn::StoreU(hn::Min(hn::Max(a0, vlo), vhi), d, yout + p * L);
  }
}

// ---- Pointwise expand fused into the depthwise (dwconv_expand_block) -------------------
// Padded rows [r0, r0 + rows) of channel block c0 of E = clamp(W1 X + b1, lo1, hi1), E
// never stored whole: xin[((r - r0) * cols + col) * L + l], zero outside X (the depthwise
// pads E, not X). Every pixel is a vector of L channels: the sum over k of W1's column k
// (wt: k-major, one vector a k) times X[k][pixel] broadcast, eight pixels at a time (eight
// chains of FMAs; pixels run on across rows). Two blocks sharing each broadcast (a second
// weight vector a k, sixteen chains) were 1.02-1.05x slower on mobilenet_v2's shapes.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void ExpandRowsIn(D d, const ConvShape& s, const DwBlockGeom& g, const DwExpand& e, const float* xn,
                             const float* wt, V vb1, int64_t r0, int64_t rows, float* xin) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t IH = s.in[1], IW = s.in[2], pbh = s.pb[1], pbw = s.pb[2], HW = IH * IW;
  const int64_t K = e.K, row_floats = g.cols * L;
  const V zero = hn::Zero(d), vlo1 = hn::Set(d, e.lo), vhi1 = hn::Set(d, e.hi);
  // Rows outside X, and the padding columns of the rows inside.
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ih = r0 + r - pbh;
    float* row = xin + r * row_floats;
    if (ih < 0 || ih >= IH) {
      for (int64_t c = 0; c < g.cols; ++c) hn::StoreU(zero, d, row + c * L);
      continue;
    }
    for (int64_t c = 0; c < pbw && c < g.cols; ++c) hn::StoreU(zero, d, row + c * L);
    for (int64_t c = pbw + IW; c < g.cols; ++c) hn::StoreU(zero, d, row + c * L);
  }
  const int64_t ih0 = std::max<int64_t>(0, r0 - pbh), ih1 = std::min(IH, r0 + rows - pbh);
  if (ih0 >= ih1) return;
  // Pixel q's place in xin; columns past g.cols (that the depthwise never reads) are not kept.
  int64_t rr = ih0 + pbh - r0, cc = pbw;
  auto next_dst = [&]() {
    float* dst = cc < g.cols ? xin + rr * row_floats + cc * L : nullptr;
    if (++cc == pbw + IW) cc = pbw, ++rr;
    return dst;
  };
  auto put = [&](float* dst, V v) {
    if (dst) hn::StoreU(hn::Min(hn::Max(v, vlo1), vhi1), d, dst);
  };
  const int64_t q1 = ih1 * IW;
  for (int64_t q = ih0 * IW; q < q1; q += 8) {
    // The last 1-7 pixels go as a group of eight whose extra lanes repeat the last pixel
    // and are not stored (one at a time, each was a chain of K dependent FMAs).
    const int64_t rem = std::min<int64_t>(8, q1 - q);
    float* dd[8];
    int64_t xi[8];
    for (int64_t j = 0; j < 8; ++j) {
      dd[j] = j < rem ? next_dst() : nullptr;
      xi[j] = std::min(j, rem - 1);
    }
    V a0 = vb1, a1 = vb1, a2 = vb1, a3 = vb1, a4 = vb1, a5 = vb1, a6 = vb1, a7 = vb1;
    const float* xq = xn + q;
    const float* wk = wt;
    if (rem == 8) {
      for (int64_t k = 0; k < K; ++k, xq += HW, wk += e.wt_stride) {
        const V w0 = hn::LoadU(d, wk);
        a0 = hn::MulAdd(w0, hn::Set(d, xq[0]), a0);
        a1 = hn::MulAdd(w0, hn::Set(d, xq[1]), a1);
        a2 = hn::MulAdd(w0, hn::Set(d, xq[2]), a2);
        a3 = hn::MulAdd(w0, hn::Set(d, xq[3]), a3);
        a4 = hn::MulAdd(w0, hn::Set(d, xq[4]), a4);
        a5 = hn::MulAdd(w0, hn::Set(d, xq[5]), a5);
        a6 = hn::MulAdd(w0, hn::Set(d, xq[6]), a6);
        a7 = hn::MulAdd(w0, hn::Set(d, xq[7]), a7);
      }
    } else {
      for (int64_t k = 0; k < K; ++k, xq += HW, wk += e.wt_stride) {
        const V w0 = hn::LoadU(d, wk);
        a0 = hn::MulAdd(w0, hn::Set(d, xq[xi[0]]), a0);
        a1 = hn::MulAdd(w0, hn::Set(d, xq[xi[1]]), a1);
        a2 = hn::MulAdd(w0, hn::Set(d, xq[xi[2]]), a2);
        a3 = hn::MulAdd(w0, hn::Set(d, xq[xi[3]]), a3);
        a4 = hn::MulAdd(w0, hn::Set(d, xq[xi[4]]), a4);
        a5 = hn::MulAdd(w0, hn::Set(d, xq[xi[5]]), a5);
        a6 = hn::MulAdd(w0, hn::Set(d, xq[xi[6]]), a6);
        a7 = hn::MulAdd(w0, hn::Set(d, xq[xi[7]]), a7);
      }
    }
    put(dd[0], a0), put(dd[1], a1), put(dd[2], a2), put(dd[3], a3);
    put(dd[4], a4), put(dd[5], a5), put(dd[6], a6), put(dd[7], a7);
  }
}

// One channel block of the depthwise, its padded input rows gathered from X (e null) or
// computed from the fused expand's input (e: dwconv_expand_block), a chunk at a time.
void BlockRun(const ConvShape& s, int64_t block, int64_t oh_begin, int64_t oh_end, const DwExpand* e, const float* x,
              const float* w, const float* bias, float* y, float* slot, float lo, float hi) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const DwBlockGeom g = dw_block_geom(s, L);
  const int64_t IH = s.in[1], IW = s.in[2], OH = s.out[1], OW = s.out[2];
  const int64_t c0 = block * L % s.M, n = block * L / s.M;  // M == C, M % L == 0
  float* xin = slot;
  float* yout = slot + g.in_floats;
  HWY_ALIGN float wv[kDwBlockMaxTaps * (HWY_MAX_BYTES / sizeof(float))];
  int64_t off[kDwBlockMaxTaps];
  BlockTaps(d, s, g, w, c0, wv, off);
  const V vb = bias ? hn::LoadU(d, bias + c0) : hn::Zero(d);
  const V vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  const V vb1 = e && e->bias ? hn::LoadU(d, e->bias + c0) : hn::Zero(d);
  float* yb = y + (n * s.M + c0) * OH * OW;
  const int64_t row_floats = g.cols * L;
  int64_t have0 = 0, have1 = 0;  // padded rows [have0, have1) are in xin (e only)
  for (int64_t oh0 = oh_begin; oh0 < oh_end; oh0 += g.chunk) {
    const int64_t oh1 = std::min(oh_end, oh0 + g.chunk);
    const int64_t r0 = oh0 * s.s[1], r1 = (oh1 - 1) * s.s[1] + (s.k[1] - 1) * s.d[1] + 1;
    if (!e) {
      GatherBlockIn(s, g, x + (n * s.C + c0) * IH * IW, 0.0f, r0, r1 - r0, xin);
    } else {
      // Rows the last chunk also read move to the front instead of being computed again.
      int64_t kept = 0;
      if (r0 >= have0 && r0 < have1) {
        kept = have1 - r0;
        std::memmove(xin, xin + (r0 - have0) * row_floats, size_t(kept * row_floats) * sizeof(float));
      }
      ExpandRowsIn(d, s, g, *e, x + n * e->K * IH * IW, e->wt + c0, vb1, r0 + kept, r1 - r0 - kept,
                   xin + kept * row_floats);
      have0 = r0, have1 = r1;
    }
    BlockChunk(d, s, g, xin, wv, off, vb, vlo, vhi, oh0, oh1, yout);
    GatherBlockOut(yout, (oh1 - oh0) * OW, OH * OW, yb + oh0 * OW);
  }
}

void BlockImpl(const ConvShape& s, int64_t block, int64_t oh_begin, int64_t oh_end, const float* x, const float* w,
               const float* bias, float* y, float* slot, float lo, float hi) {
  BlockRun(s, block, oh_begin, oh_end, nullptr, x, w, bias, y, slot, lo, hi);
}

void ExpandBlockImpl(const ConvShape& s, int64_t block, int64_t oh_begin, int64_t oh_end, const DwExpand& e,
                     const float* x, const float* w, const float* bias, float* y, float* slot, float lo, float hi) {
  BlockRun(s, block, oh_begin, oh_end, &e, x, w, bias, y, slot, lo, hi);
}

// Max pooling, channel-blocked the same way (-inf padding; NaN propagates as in the
// reference). Windows of up to kMaxPoolBlockTaps taps.
void MaxBlockImpl(const ConvShape& s, int64_t block, const float* x, float* y, float* slot) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const DwBlockGeom g = dw_block_geom(s, L);
  const int64_t OH = s.out[1], OW = s.out[2], KW = s.k[2], taps = s.k[1] * KW;
  const int64_t sh = s.s[1], sw = s.s[2], dh = s.d[1], dw = s.d[2];
  float* xin = slot;
  float* yout = slot + g.in_floats;
  int64_t off[kMaxPoolBlockTaps];
  for (int64_t t = 0; t < taps; ++t) off[t] = ((t / KW) * dh * g.cols + (t % KW) * dw) * L;
  const V ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
  const int64_t px = sw * L;
#define MINNOW_MAX_TAP(m, p)                                  \
  do {                                                        \
    const V v = hn::LoadU(d, p);                              \
    m = hn::IfThenElse(hn::Or(hn::Gt(v, m), hn::IsNaN(v)), v, m); \
  } while (0)
  const float* xb = x + block * L * s.in[1] * s.in[2];
  float* yb = y + block * L * OH * OW;
  for (int64_t oh0 = 0; oh0 < OH; oh0 += g.chunk) {
  const int64_t oh1 = std::min(OH, oh0 + g.chunk);
  GatherBlockIn(s, g, xb, -std::numeric_limits<float>::infinity(), oh0 * sh,
                (oh1 - oh0 - 1) * sh + (s.k[1] - 1) * dh + 1, xin);
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const float* src0 = xin + (oh - oh0) * sh * g.cols * L;
    float* dst = yout + (oh - oh0) * OW * L;
    int64_t ow = 0;
    for (; ow + 8 <= OW; ow += 8) {  // eight independent chains, as the depthwise block
      V m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf, m4 = ninf, m5 = ninf, m6 = ninf, m7 = ninf;
      const float* src = src0 + ow * px;
      for (int64_t t = 0; t < taps; ++t) {
        const float* p = src + off[t];
        MINNOW_MAX_TAP(m0, p);
        MINNOW_MAX_TAP(m1, p + px);
        MINNOW_MAX_TAP(m2, p + 2 * px);
        MINNOW_MAX_TAP(m3, p + 3 * px);
        MINNOW_MAX_TAP(m4, p + 4 * px);
        MINNOW_MAX_TAP(m5, p + 5 * px);
        MINNOW_MAX_TAP(m6, p + 6 * px);
        MINNOW_MAX_TAP(m7, p + 7 * px);
      }
      float* o = dst + ow * L;
      hn::StoreU(m0, d, o);
      hn::StoreU(m1, d, o + L);
      hn::StoreU(m2, d, o + 2 * L);
      hn::StoreU(m3, d, o + 3 * L);
      hn::StoreU(m4, d, o + 4 * L);
      hn::StoreU(m5, d, o + 5 * L);
      hn::StoreU(m6, d, o + 6 * L);
      hn::StoreU(m7, d, o + 7 * L);
    }
    for (; ow + 4 <= OW; ow += 4) {
      V m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
      const float* src = src0 + ow * px;
      for (int64_t t = 0; t < taps; ++t) {
        const float* p = src + off[t];
        MINNOW_MAX_TAP(m0, p);
        MINNOW_MAX_TAP(m1, p + px);
        MINNOW_MAX_TAP(m2, p + 2 * px);
        MINNOW_MAX_TAP(m3, p + 3 * px);
      }
      hn::StoreU(m0, d, dst + ow * L);
      hn::StoreU(m1, d, dst + (ow + 1) * L);
      hn::StoreU(m2, d, dst + (ow + 2) * L);
      hn::StoreU(m3, d, dst + (ow + 3) * L);
    }
    for (; ow < OW; ++ow) {
      V m0 = ninf;
      const float* src = src0 + ow * px;
      for (int64_t t = 0; t < taps; ++t) MINNOW_MAX_TAP(m0, src + off[t]);
      hn::StoreU(m0, d, dst + ow * L);
    }
  }
  GatherBlockOut(yout, (oh1 - oh0) * OW, OH * OW, yb + oh0 * OW);
  }
#undef MINNOW_MAX_TAP
}

// Whether any of the n floats at p is NaN (one pass, no early exit: planes are small).
bool AnyNaN(const float* p, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  auto m = hn::Ne(hn::Zero(d), hn::Zero(d));  // all false
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const auto v = hn::LoadU(d, p + i);
    m = hn::Or(m, hn::IsNaN(v));
  }
  bool any = !hn::AllFalse(d, m);
  for (; i < n; ++i) any |= std::isnan(p[i]);
  return any;
}

// Max over each window; NaN propagates (as the reference's "v > m || isnan(v)"). A
// window wholly in the padding gives -inf. A plane without NaN (checked first: one
// compare per input float) takes plain Max, one instruction a tap, four output vectors
// at a time so the chains overlap; the compare-and-select that keeps NaN is four a tap
// and runs only for planes that hold one. Tap offsets come from a table built once per
// plane (no divisions in the loops).
// Stride 2 along rows (dilation 1, up to 3 taps a row): no padded plane. Per output row,
// two passes: the max over the window's input rows, column by column, into a row buffer
// (contiguous loads, one Max a row), then the max over each window's 1-3 columns from the
// buffer: L outputs read 2L (+2) consecutive floats (+0, +1, +2), whose even lanes (a
// two-vector concatenation) are the outputs. The buffer holds 2 OW + 2 floats, -inf in
// the left padding and past the input row, so every output goes by vectors (the last
// overlapping the one before) and no window needs care at the edges. Two buffers: output
// row oh's windows are taken after row oh + 1's column pass, when its buffer's stores have
// long reached L1. Vectors of at most 8 lanes: with AVX-512's 16 every load of a row
// (odd widths, rows start anywhere) straddles two cache lines, and 13-wide outputs fit.
// NaN: each column's row values are also summed, over the plane, and the sum checked (NaN
// when any value read is; a false alarm only from infinities, which merely sends the plane
// to the general kernel): returns false when the plane holds a NaN a window reads, or the
// shape is not one it takes, and the caller then runs the general plane kernel.
bool MaxPlaneStride2(const ConvShape& s, const float* xp, float* yp, float* buf) {
#if HWY_TARGET == HWY_SCALAR
  (void)s, (void)xp, (void)yp, (void)buf;
  return false;
#else
  const hn::CappedTag<float, kMaxRowLanes> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t IH = s.in[1], IW = s.in[2], OH = s.out[1], OW = s.out[2];
  const int64_t KH = s.k[1], KW = s.k[2], sh = s.s[1], dh = s.d[1], ph = s.pb[1], pl = s.pb[2];
  constexpr int64_t kMaxRows = 16;
  if (!maxpool_rows_shape(s, L) || KH > kMaxRows) return false;
  const int64_t bw = 2 * OW + 2;  // buffer floats; input column c at buffer column c + pl
  if (pl >= bw || 2 * bw > dwconv_slot_floats(s)) return false;  // two buffers in the slot
  const int64_t cw = std::min(IW, bw - pl);  // input columns a window reads
  const float ninf = -std::numeric_limits<float>::infinity();
  for (float* bb : {buf, buf + bw}) {
    for (int64_t q = 0; q < pl; ++q) bb[q] = ninf;
    for (int64_t q = pl + cw; q < bw; ++q) bb[q] = ninf;
  }
  V sum0 = hn::Zero(d), sum1 = hn::Zero(d);
  bool nan_tail = false;
  const float* rows[kMaxRows];
  auto windows = [&](int64_t oh) {
    const float* bb = buf + (oh & 1) * bw;
    float* yr = yp + oh * OW;
    for (int64_t ow = 0;; ow += L) {
      if (ow + L > OW) ow = OW - L;  // the last vector overlaps the one before
      const float* b = bb + 2 * ow;
      V lo = hn::LoadU(d, b), hi = hn::LoadU(d, b + L);
      if (KW > 1) {
        lo = hn::Max(lo, hn::LoadU(d, b + 1));
        hi = hn::Max(hi, hn::LoadU(d, b + L + 1));
      }
      if (KW > 2) {
        lo = hn::Max(lo, hn::LoadU(d, b + 2));
        hi = hn::Max(hi, hn::LoadU(d, b + L + 2));
      }
      hn::StoreU(hn::ConcatEven(d, hi, lo), d, yr + ow);
      if (ow + L >= OW) break;
    }
  };
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* bb = buf + (oh & 1) * bw + pl;
    // The rows output row oh + 2 adds (sh of them): a plane larger than L2's share comes
    // from L3 / DRAM, and the row-by-row pattern outran the hardware prefetchers.
    const int64_t pf = std::min<int64_t>(IH - 1, (oh + 2) * sh - ph + (KH - 1) * dh);
    for (int64_t r = std::max<int64_t>(0, pf - sh + 1); r <= pf; ++r)
      for (int64_t c = 0; c < IW; c += 16) __builtin_prefetch(xp + r * IW + c, 0, 3);
    int64_t n = 0;
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t ih = oh * sh - ph + kh * dh;
      if (ih >= 0 && ih < IH) rows[n++] = xp + ih * IW;
    }
    int64_t c = 0;
    if (n == 0) {
      for (; c < cw; ++c) bb[c] = ninf;
    } else if (n == 3 && cw >= 2 * L) {  // 3x3 windows: two vectors a step, unrolled
      const float *r0 = rows[0], *r1 = rows[1], *r2 = rows[2];
      for (;; c += 2 * L) {
        if (c + 2 * L > cw) c = cw - 2 * L;  // the last step overlaps the one before
        const V a0 = hn::LoadU(d, r0 + c), a1 = hn::LoadU(d, r1 + c), a2 = hn::LoadU(d, r2 + c);
        const V b0 = hn::LoadU(d, r0 + c + L), b1 = hn::LoadU(d, r1 + c + L);
        const V b2 = hn::LoadU(d, r2 + c + L);
        hn::StoreU(hn::Max(hn::Max(a0, a1), a2), d, bb + c);
        hn::StoreU(hn::Max(hn::Max(b0, b1), b2), d, bb + c + L);
        sum0 = hn::Add(sum0, hn::Add(hn::Add(a0, a1), a2));
        sum1 = hn::Add(sum1, hn::Add(hn::Add(b0, b1), b2));
        if (c + 2 * L >= cw) break;
      }
    } else {
      for (; c + L <= cw; c += L) {
        V m = hn::LoadU(d, rows[0] + c), sum = m;
        for (int64_t r = 1; r < n; ++r) {
          const V v = hn::LoadU(d, rows[r] + c);
          m = hn::Max(m, v);
          sum = hn::Add(sum, v);
        }
        sum0 = hn::Add(sum0, sum);
        hn::StoreU(m, d, bb + c);
      }
      for (; c < cw; ++c) {
        float m = rows[0][c];
        nan_tail |= std::isnan(m);
        for (int64_t r = 1; r < n; ++r) {
          nan_tail |= std::isnan(rows[r][c]);
          m = std::max(m, rows[r][c]);
        }
        bb[c] = m;
      }
    }
    if (oh > 0) windows(oh - 1);
  }
  windows(OH - 1);
  return !nan_tail && hn::AllFalse(d, hn::IsNaN(hn::Add(sum0, sum1)));
#endif
}

// 3x3 windows, stride 2 both ways, dilation 1, padding 0 or 1 before (squeezenet1_1's and
// resnet's pools), on AVX-512: the input rows read in place, 16 outputs a vector. Per input
// row, the horizontal max of each output's three columns 2 o - pl, + 1, + 2: the even and
// odd lanes of the vector pair loaded at 2 o0 - pl (ConcatEven / ConcatOdd) and the even
// lanes of the pair loaded 2 floats on; then each output row is the max of three such
// rows, two output rows from five input rows (the middle one shared). Masked loads (-inf
// in the lanes off the row) at the row ends and a masked store of the last vector: no
// padded copy, no row buffer, no transposes. NaN: the first pair's lanes and the second
// pair's last vector (every column a window reads: the last output of a full vector reads
// one column past the first pair) are summed and the sum checked, as in MaxPlaneStride2
// (false: the caller takes the general kernel).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define MINNOW_MAX_ROWS 1
constexpr int64_t kMaxRowsPlaneBytes = 16 * 1024;
bool MaxRows3x3S2Shape(const ConvShape& s) {
  return s.in[1] * s.in[2] * int64_t(sizeof(float)) <= kMaxRowsPlaneBytes && s.k[0] == 1 && s.in[0] == 1 && s.k[1] == 3 && s.k[2] == 3 && s.s[1] == 2 && s.s[2] == 2 &&
         s.d[1] == 1 && s.d[2] == 1 && s.pb[1] <= 1 && s.pb[2] <= 1;
}
bool MaxRows3x3S2Plane(const ConvShape& s, const float* xp, float* yp) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  using M = hn::Mask<decltype(d)>;
  constexpr int64_t L = HWY_LANES(float);
  const int64_t IH = s.in[1], IW = s.in[2], OH = s.out[1], OW = s.out[2];
  const int64_t ph = s.pb[1], pl = s.pb[2];
  const V ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
  V sum = hn::Zero(d);
  for (int64_t o0 = 0; o0 < OW; o0 += L) {
    const int64_t c = 2 * o0 - pl;  // the first output's first column
    const bool inner = c >= 0 && c + 2 * L + 2 <= IW;
    const M m0 = LanesInRow(d, c, IW), m1 = LanesInRow(d, c + L, IW);
    const M m2 = LanesInRow(d, c + 2, IW), m3 = LanesInRow(d, c + 2 + L, IW);
    const M mo = LanesInRow(d, o0, OW);
    const bool full = o0 + L <= OW;
    // The horizontal maxima of input row r (-inf for rows off the plane).
    auto row = [&](int64_t r) {
      if (r < 0 || r >= IH) return ninf;
      const float* xr = xp + r * IW + c;
      V a0, a1, b0, b1;
      if (inner) {
        a0 = hn::LoadU(d, xr);
        a1 = hn::LoadU(d, xr + L);
        b0 = hn::LoadU(d, xr + 2);
        b1 = hn::LoadU(d, xr + 2 + L);
        sum = hn::Add(sum, hn::Add(hn::Add(a0, a1), b1));
      } else {  // zeros off the row (summed as such), then -inf there
        a0 = hn::MaskedLoad(m0, d, xr);
        a1 = hn::MaskedLoad(m1, d, xr + L);
        b1 = hn::MaskedLoad(m3, d, xr + 2 + L);
        sum = hn::Add(sum, hn::Add(hn::Add(a0, a1), b1));
        a0 = hn::IfThenElse(m0, a0, ninf);
        a1 = hn::IfThenElse(m1, a1, ninf);
        b0 = hn::IfThenElse(m2, hn::MaskedLoad(m2, d, xr + 2), ninf);
        b1 = hn::IfThenElse(m3, b1, ninf);
      }
      return hn::Max(hn::Max(hn::ConcatEven(d, a1, a0), hn::ConcatOdd(d, a1, a0)), hn::ConcatEven(d, b1, b0));
    };
    V first = row(-ph);  // input row 2 oh - ph, the previous output row's last
    for (int64_t oh = 0; oh < OH; oh += 2) {
      const int64_t ih = 2 * oh - ph;
      const V r2 = row(ih + 2);
      const V out0 = hn::Max(hn::Max(first, row(ih + 1)), r2);
      float* yr = yp + oh * OW + o0;
      if (full) hn::StoreU(out0, d, yr); else hn::BlendedStore(out0, mo, d, yr);
      if (oh + 1 >= OH) break;
      first = row(ih + 4);
      const V out1 = hn::Max(hn::Max(r2, row(ih + 3)), first);
      if (full) hn::StoreU(out1, d, yr + OW); else hn::BlendedStore(out1, mo, d, yr + OW);
    }
  }
  return hn::AllFalse(d, hn::IsNaN(sum));
}
#endif

void MaxPlaneImpl(const ConvShape& s, int64_t plane, const float* x, float* y, float* slot) {
#ifdef MINNOW_MAX_ROWS
  if (MaxRows3x3S2Shape(s) && MaxRows3x3S2Plane(s, x + plane * s.in[1] * s.in[2], y + plane * s.out[1] * s.out[2]))
    return;
#endif
#undef MINNOW_MAX_ROWS
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  if (MaxPlaneStride2(s, x + plane * s.in[1] * s.in[2], y + plane * s.out[1] * s.out[2], slot)) return;
  const DwGeom g = dw_geom(s, L);
  const int64_t sw = s.s[2], sh = s.s[1];
  const int64_t KH = s.k[1], KW = s.k[2], OH = s.out[1], OW = s.out[2];
  const float* xp = x + plane * s.in[1] * s.in[2];
  BuildPlane(s, xp, -std::numeric_limits<float>::infinity(), slot);
  const bool nan = AnyNaN(xp, s.in[1] * s.in[2]);
  float* yp = y + plane * OH * OW;
  HWY_ALIGN float tmp[(HWY_MAX_BYTES / sizeof(float))];
  const V ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
  int64_t off[kMaxTaps];
  const int64_t taps = KH * KW;
  const bool table = TapOffsets(s, g, off);
  auto tap_off = [&](int64_t t) { return table ? off[t] : TapOffset(s, g, t); };
  const int64_t row_step = sh * sw * g.width;
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* yr = yp + oh * OW;
    const float* base = slot + oh * row_step;
    int64_t ow = 0;
    if (!nan && table)
      for (; ow + 4 * L <= OW; ow += 4 * L) {
        V m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
        for (int64_t t = 0; t < taps; ++t) {
          const float* p = base + off[t] + ow;
          m0 = hn::Max(m0, hn::LoadU(d, p));
          m1 = hn::Max(m1, hn::LoadU(d, p + L));
          m2 = hn::Max(m2, hn::LoadU(d, p + 2 * L));
          m3 = hn::Max(m3, hn::LoadU(d, p + 3 * L));
        }
        hn::StoreU(m0, d, yr + ow);
        hn::StoreU(m1, d, yr + ow + L);
        hn::StoreU(m2, d, yr + ow + 2 * L);
        hn::StoreU(m3, d, yr + ow + 3 * L);
      }
    for (; ow < OW; ow += L) {
      V m = ninf;
      if (nan)
        for (int64_t t = 0; t < taps; ++t) {
          const V v = hn::LoadU(d, base + tap_off(t) + ow);
          m = hn::IfThenElse(hn::Or(hn::Gt(v, m), hn::IsNaN(v)), v, m);
        }
      else
        for (int64_t t = 0; t < taps; ++t) m = hn::Max(m, hn::LoadU(d, base + tap_off(t) + ow));
      if (ow + L <= OW) {
        hn::StoreU(m, d, yr + ow);
      } else {
        hn::Store(m, d, tmp);
        std::memcpy(yr + ow, tmp, size_t(OW - ow) * sizeof(float));
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace minnow {
namespace cpu_dense {
namespace kernels {

HWY_EXPORT(DwLanesImpl);
HWY_EXPORT(PlaneImpl);
HWY_EXPORT(MaxPlaneImpl);
HWY_EXPORT(DwBlockSlotFloatsImpl);
HWY_EXPORT(BlockImpl);
HWY_EXPORT(ExpandBlockImpl);
HWY_EXPORT(MaxBlockImpl);
HWY_EXPORT(TransposesImpl);
HWY_EXPORT(RowsImplApplies);
HWY_EXPORT(RowsImpl);

void maxpool_plane(const ConvShape& s, int64_t plane, const float* x, float* y, float* slot) {
  HWY_DYNAMIC_DISPATCH(MaxPlaneImpl)(s, plane, x, y, slot);
}

bool maxpool_plane_reads_rows(const ConvShape& s) {
  return maxpool_rows_shape(s, std::min(kMaxRowLanes, HWY_DYNAMIC_DISPATCH(DwLanesImpl)()));
}

bool dwconv_applies(const ConvShape& s) {
  return s.group == s.C && s.Cg() == 1 && s.k[0] == 1 && s.in[0] == 1 && s.out[0] == 1 &&
         s.M % s.group == 0;
}

int64_t dwconv_slot_floats(const ConvShape& s) {
  const DwGeom g = dw_geom(s, HWY_DYNAMIC_DISPATCH(DwLanesImpl)());
  return g.rows * s.s[2] * g.width;
}

void dwconv_plane(const ConvShape& s, int64_t plane, const float* x, const float* w,
                  const float* bias, float* y, float* slot, float lo, float hi) {
  HWY_DYNAMIC_DISPATCH(PlaneImpl)(s, plane, x, w, bias, y, slot, lo, hi);
}

int64_t dwconv_block_lanes() { return HWY_DYNAMIC_DISPATCH(DwLanesImpl)(); }
bool dwconv_block_transposes() { return HWY_DYNAMIC_DISPATCH(TransposesImpl)(); }
bool dwconv_rows_applies(const ConvShape& s) { return HWY_DYNAMIC_DISPATCH(RowsImplApplies)(s); }
void dwconv_rows(const ConvShape& s, int64_t plane, int64_t oh0, int64_t oh1, const float* x, const float* w,
                 const float* bias, float* y, int64_t ys, float lo, float hi) {
  HWY_DYNAMIC_DISPATCH(RowsImpl)(s, plane, oh0, oh1, x, w, bias, y, ys, lo, hi);
}
int64_t dwconv_plane_slot_floats(const ConvShape& s) { return dwconv_rows_applies(s) ? 0 : dwconv_slot_floats(s); }

// What both channel-blocked kernels need: a 2-D window (the D axis trivial), channels in
// whole vectors, at most max_taps taps, and planes the 32-bit gather indices can span.
static bool block_fits(const ConvShape& s, int64_t max_taps) {
  const int64_t L = dwconv_block_lanes();
  return L > 1 && s.k[0] == 1 && s.in[0] == 1 && s.out[0] == 1 && s.C % L == 0 &&
         s.k[1] * s.k[2] <= max_taps && s.in[1] * s.in[2] * L <= (int64_t(1) << 30);
}

bool dwconv_block_applies(const ConvShape& s) {
  return dwconv_applies(s) && s.M == s.C && block_fits(s, kDwBlockMaxTaps);
}

int64_t dwconv_block_slot_floats(const ConvShape& s) {
  return HWY_DYNAMIC_DISPATCH(DwBlockSlotFloatsImpl)(s);
}

void dwconv_block(const ConvShape& s, int64_t block, int64_t oh_begin, int64_t oh_end, const float* x,
                  const float* w, const float* bias, float* y, float* slot, float lo, float hi) {
  HWY_DYNAMIC_DISPATCH(BlockImpl)(s, block, oh_begin, oh_end, x, w, bias, y, slot, lo, hi);
}

bool maxpool_block_applies(const ConvShape& s) { return block_fits(s, kMaxPoolBlockTaps); }

void dwconv_expand_block(const ConvShape& s, int64_t block, int64_t oh_begin, int64_t oh_end, const DwExpand& e,
                         const float* x, const float* w, const float* bias, float* y, float* slot, float lo,
                         float hi) {
  HWY_DYNAMIC_DISPATCH(ExpandBlockImpl)(s, block, oh_begin, oh_end, e, x, w, bias, y, slot, lo, hi);
}

void maxpool_block(const ConvShape& s, int64_t block, const float* x, float* y, float* slot) {
  HWY_DYNAMIC_DISPATCH(MaxBlockImpl)(s, block, x, y, slot);
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
#endif
