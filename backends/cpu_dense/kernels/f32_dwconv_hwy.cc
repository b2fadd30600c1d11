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
#include "kernels/conv.h"

#include <algorithm>
#include <cstring>
#include <limits>

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

  BuildPlane(s, xp, 0.0f, slot);

  const V vb = hn::Set(d, bias ? bias[m] : 0.0f);
  const V vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  HWY_ALIGN float tmp[(HWY_MAX_BYTES / sizeof(float))];
  // Each tap's offset in the padded plane from a row's origin, computed once (no
  // divisions in the loops); more taps than this table holds are computed inline.
  constexpr int64_t kMaxTaps = 64;
  int64_t off[kMaxTaps];
  const int64_t taps = KH * KW;
  const bool table = taps <= kMaxTaps;
  if (table)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int64_t c = kw * dw;
        off[kh * KW + kw] = (kh * dh * sw + c % sw) * g.width + c / sw;
      }
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

// Max over each window; NaN propagates (as the reference's "v > m || isnan(v)"). A
// window wholly in the padding gives -inf.
void MaxPlaneImpl(const ConvShape& s, int64_t plane, const float* x, float* y, float* slot) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const DwGeom g = dw_geom(s, L);
  const int64_t sw = s.s[2], sh = s.s[1], dw = s.d[2], dh = s.d[1];
  const int64_t KH = s.k[1], KW = s.k[2], OH = s.out[1], OW = s.out[2];
  BuildPlane(s, x + plane * s.in[1] * s.in[2], -std::numeric_limits<float>::infinity(), slot);
  float* yp = y + plane * OH * OW;
  HWY_ALIGN float tmp[(HWY_MAX_BYTES / sizeof(float))];
  const V ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* yr = yp + oh * OW;
    for (int64_t ow = 0; ow < OW; ow += L) {
      V m = ninf;
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int64_t r = oh * sh + kh * dh;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t c = kw * dw;
          const V v = hn::LoadU(d, slot + (r * sw + c % sw) * g.width + ow + c / sw);
          m = hn::IfThenElse(hn::Or(hn::Gt(v, m), hn::IsNaN(v)), v, m);
        }
      }
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

void maxpool_plane(const ConvShape& s, int64_t plane, const float* x, float* y, float* slot) {
  HWY_DYNAMIC_DISPATCH(MaxPlaneImpl)(s, plane, x, y, slot);
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

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
#endif
