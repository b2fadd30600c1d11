// f32_conv_chw2hwc_12x2v: first convolutions of few input channels with the output
// channels as the vector lanes (kernels/conv_hwc.h), and the max pool that reads their
// output in that layout, writing its own output as planes. Compiled per Highway target.
// Arrays of vectors keep the tile readable; the sizeless SVE vector types cannot be array
// elements, so the SVE targets are left out here (NEON runs on those cores).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/f32_conv_hwc_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/conv_hwc.h"

#include <algorithm>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_dense {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

int64_t HwcLanesImpl() { return static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>())); }

// P output pixels of row `oh` from column ow0 on, output channels [m0, m0 + 2 lanes): P x 2
// accumulators, per tap two vectors of W and P broadcast input floats.
template <int P, class M>
HWY_INLINE void PixelsTile(const HwcConv& g, const float* xp, const float* wt, int64_t oh, int64_t ow0,
                           int64_t m0, float* y, M& nan) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  V a0[P], a1[P];
  for (int p = 0; p < P; ++p) a0[p] = a1[p] = hn::Zero(d);
  const int64_t step = g.sw;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const float* xr = xp + (c * g.hp + oh * g.sh + kh * g.dh) * g.wp + ow0 * step;
      const float* wk = wt + ((c * g.KH + kh) * g.KW) * g.M + m0;
      for (int64_t kw = 0; kw < g.KW; ++kw, wk += g.M) {
        const V w0 = hn::LoadU(d, wk), w1 = hn::LoadU(d, wk + L);
        const float* xk = xr + kw * g.dw;
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          const V xv = hn::Set(d, xk[p * step]);
          a0[p] = hn::MulAdd(w0, xv, a0[p]);
          a1[p] = hn::MulAdd(w1, xv, a1[p]);
        }
      }
    }
  const V b0 = g.bias ? hn::LoadU(d, g.bias + m0) : hn::Zero(d);
  const V b1 = g.bias ? hn::LoadU(d, g.bias + m0 + L) : hn::Zero(d);
  const V lo = hn::Set(d, g.lo), hi = hn::Set(d, g.hi);
  float* yp = y + (oh * g.OW + ow0) * g.M + m0;
  for (int p = 0; p < P; ++p, yp += g.M) {
    // The clamp as the GEMM's epilogue (Max then Min, the sum first): the same outputs.
    const V v0 = hn::Min(hn::Max(hn::Add(a0[p], b0), lo), hi), v1 = hn::Min(hn::Max(hn::Add(a1[p], b1), lo), hi);
    nan = hn::Or(nan, hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)));
    hn::StoreU(v0, d, yp);
    hn::StoreU(v1, d, yp + L);
  }
}

bool ConvHwcRowsImpl(const HwcConv& g, const float* xp, const float* wt, int64_t oh0, int64_t oh1, float* y) {
  const hn::ScalableTag<float> d;
  auto nan = hn::FirstN(d, 0);
  const int64_t L2 = 2 * HwcLanesImpl();
  // 32 vector registers (AVX-512, NEON): 12 pixels x 2 vectors; 16 (AVX2, SSE4): 6.
  constexpr int kP = HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3 ? 6 : 12;
  for (int64_t oh = oh0; oh < oh1; ++oh)
    for (int64_t m0 = 0; m0 < g.M; m0 += L2) {
      int64_t ow = 0;
      for (; ow + kP <= g.OW; ow += kP) PixelsTile<kP>(g, xp, wt, oh, ow, m0, y, nan);
      for (; ow + 2 <= g.OW; ow += 2) PixelsTile<2>(g, xp, wt, oh, ow, m0, y, nan);
      for (; ow < g.OW; ++ow) PixelsTile<1>(g, xp, wt, oh, ow, m0, y, nan);
    }
  return !hn::AllFalse(d, nan);
}

// Pool rows [ph0, ph1) from HWC conv rows (row r of `in` = conv row r + g.row0), every
// channel, into planes y[m][ph][pw] of PH x PW. Per output row and vector of channels,
// the windows' columns' maxima over the window rows, the last column's kept for the next
// window (they overlap by one column at 3 wide, stride 2), into tmp [PW][M]; then tmp to
// the planes a vector of columns at a time. `nan`: the rows may hold a NaN, so every
// element is compared NaN-propagating (x86's max returns its second operand on a NaN).
void MaxPoolHwcImpl(const HwcPool& g, const float* in, int64_t ph0, int64_t ph1, float* y, float* tmp, bool nan) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const V ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
  const int64_t rs = g.IW * g.M;
  auto max2 = [nan](V a, V b) { return nan ? hn::IfThenElse(hn::Or(hn::Gt(b, a), hn::IsNaN(b)), b, a) : hn::Max(a, b); };
  for (int64_t ph = ph0; ph < ph1; ++ph) {
    const int64_t h_start = ph * g.sh - g.ph;
    const int64_t h0 = std::max<int64_t>(h_start, 0), h1 = std::min(h_start + g.KH, g.IH);
    const float* r0 = in + (h0 - g.row0) * rs;
    const int64_t rows = h1 - h0;
    for (int64_t m = 0; m < g.M; m += L) {
      int64_t last_w = -1;
      V last = ninf;
      for (int64_t pw = 0; pw < g.PW; ++pw) {
        const int64_t w_start = pw * g.sw - g.pw;
        const int64_t w0 = std::max<int64_t>(w_start, 0), w1 = std::min(w_start + g.KW, g.IW);
        V v = ninf;
        for (int64_t w = w0; w < w1; ++w) {
          V col;
          if (w == last_w) {
            col = last;
          } else {
            const float* c = r0 + w * g.M + m;
            col = hn::LoadU(d, c);
            for (int64_t h = 1; h < rows; ++h) col = max2(col, hn::LoadU(d, c + h * rs));
          }
          v = max2(v, col);
          if (w == w1 - 1) {
            last_w = w;
            last = col;
          }
        }
        hn::StoreU(v, d, tmp + pw * g.M + m);
      }
    }
    // tmp [PW][M] -> the M planes' row ph: a vector of columns gathered at a time (one
    // float at a time this took most of the pool's time).
    const hn::RebindToSigned<decltype(d)> di;
    const auto idx = hn::Mul(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(g.M)));
    for (int64_t m = 0; m < g.M; ++m) {
      float* yr = y + (m * g.PH + ph) * g.PW;
      int64_t pw = 0;
      for (; pw + L <= g.PW; pw += L) hn::StoreU(hn::GatherIndex(d, tmp + pw * g.M + m, idx), d, yr + pw);
      for (; pw < g.PW; ++pw) yr[pw] = tmp[pw * g.M + m];
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

HWY_EXPORT(HwcLanesImpl);
HWY_EXPORT(ConvHwcRowsImpl);
HWY_EXPORT(MaxPoolHwcImpl);

int64_t conv_hwc_lanes() { return HWY_DYNAMIC_DISPATCH(HwcLanesImpl)(); }

bool conv_hwc_rows(const HwcConv& g, const float* xp, const float* wt, int64_t oh0, int64_t oh1, float* y) {
  return HWY_DYNAMIC_DISPATCH(ConvHwcRowsImpl)(g, xp, wt, oh0, oh1, y);
}

void maxpool_hwc_to_planes(const HwcPool& g, const float* in, int64_t ph0, int64_t ph1, float* y, float* tmp,
                           bool nan) {
  HWY_DYNAMIC_DISPATCH(MaxPoolHwcImpl)(g, in, ph0, ph1, y, tmp, nan);
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
#endif  // HWY_ONCE
