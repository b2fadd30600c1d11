// The transforms of the Winograd F(2x2, 3x3) convolution (kernels/winograd.h), compiled
// per Highway target. SIMD runs along the tiles: a group of vector-width tiles in one tile
// row reads, for each patch element (i, j), consecutive floats of the padded input,
// because its rows are stored split into even and odd columns (winograd_pad_input): tile
// tw's columns 2tw, 2tw + 1, 2tw + 2, 2tw + 3 are even[tw], odd[tw], even[tw + 1],
// odd[tw + 1]. Groups that straddle a tile row, and the block's last partial group, are
// gathered / scattered lane by lane around the same vector arithmetic.
// Arrays of vectors keep the transforms readable; the sizeless SVE vector types cannot
// be array elements, so the SVE targets are left out here (NEON runs on those cores).
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/f32_winograd_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/lane_masks-inl.h"
#include "kernels/winograd.h"

#include <algorithm>

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_dense {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// V = B^T d B for one tile, element (i, j) at v[(4 i + j) * vxi].
template <class T>
HWY_INLINE void InputTile(const T d[4][4], T v[16]) {
  T t[4][4];
  for (int j = 0; j < 4; ++j) {
    t[0][j] = d[0][j] - d[2][j];
    t[1][j] = d[1][j] + d[2][j];
    t[2][j] = d[2][j] - d[1][j];
    t[3][j] = d[1][j] - d[3][j];
  }
  for (int i = 0; i < 4; ++i) {
    v[4 * i + 0] = t[i][0] - t[i][2];
    v[4 * i + 1] = t[i][1] + t[i][2];
    v[4 * i + 2] = t[i][2] - t[i][1];
    v[4 * i + 3] = t[i][1] - t[i][3];
  }
}

// Y = A^T M A for one tile: y[i][j], (i, j) in 2x2.
template <class T>
HWY_INLINE void OutputTile(const T r[16], T y[2][2]) {
  T t[2][4];
  for (int j = 0; j < 4; ++j) {
    t[0][j] = r[j] + r[4 + j] + r[8 + j];
    t[1][j] = r[4 + j] - r[8 + j] - r[12 + j];
  }
  for (int i = 0; i < 2; ++i) {
    y[i][0] = t[i][0] + t[i][1] + t[i][2];
    y[i][1] = t[i][1] - t[i][2] - t[i][3];
  }
}

// One group of tiles of one output channel: M's 16 lanes-wide rows from q on (xi apart by
// mxi), Y = A^T M A + bias (+ addend), clamped, into `rows` (1-2) output rows of `cols`
// columns from y (row stride ow_stride; r: the addend laid out as y, or null).
template <class D>
HWY_INLINE void OutputGroup(D d, const float* q, int64_t mxi, float b, float lo, float hi, float* y,
                            const float* r, int64_t ow_stride, int rows, int64_t cols) {
  using Vec = hn::Vec<D>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t m3 = 3 * mxi;
  // Four row pointers and the strides 1-3 x mxi: every load one base + index * scale
  // address (16 offsets kept across the loop spilled to vector registers and cost a move
  // and an add per load).
  Vec m[16];
  for (int e4 = 0; e4 < 16; e4 += 4, q += 4 * mxi) {
    m[e4] = hn::LoadU(d, q);
    m[e4 + 1] = hn::LoadU(d, q + mxi);
    m[e4 + 2] = hn::LoadU(d, q + 2 * mxi);
    m[e4 + 3] = hn::LoadU(d, q + m3);
  }
  Vec yy[2][2];
  OutputTile(m, yy);
  const Vec vb = hn::Set(d, b), vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  for (int i = 0; i < rows; ++i) {
    Vec y0 = hn::Add(yy[i][0], vb), y1 = hn::Add(yy[i][1], vb);
    float* yr = y + i * ow_stride;
    const float* rr = r ? r + i * ow_stride : nullptr;
    if (cols == 2 * L) {
      if (rr) {  // a fused residual Add, laid out as y
        Vec r0, r1;
        hn::LoadInterleaved2(d, rr, r0, r1);
        y0 = hn::Add(y0, r0);
        y1 = hn::Add(y1, r1);
      }
      y0 = hn::Min(hn::Max(y0, vlo), vhi);
      y1 = hn::Min(hn::Max(y1, vlo), vhi);
      hn::StoreInterleaved2(y0, y1, d, yr);
      continue;
    }
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // The group's outputs interleaved (each tile's two columns side by side, as in the
    // row; z0: elements 0 .. L-1, z1: the rest) and stored masked to `cols`, never
    // touching memory past them. InterleaveLower / Upper work within 128-bit blocks: two
    // blocks (8 lanes) are put in order by one concat, four (16) through the stack.
    Vec z[2];
    if (L == 8) {
      const Vec lo4 = hn::InterleaveLower(d, y0, y1), hi4 = hn::InterleaveUpper(d, y0, y1);
      z[0] = hn::ConcatLowerLower(d, hi4, lo4);
      z[1] = hn::ConcatUpperUpper(d, hi4, lo4);
    } else {
      HWY_ALIGN float g[2 * kOutputGroupLanes];
      hn::StoreInterleaved2(y0, y1, d, g);
      z[0] = hn::Load(d, g);
      z[1] = hn::Load(d, g + L);
    }
    for (int h = 0; h < 2 && h * L < cols; ++h) {
      const auto mk = hn::FirstN(d, static_cast<size_t>(std::min(L, cols - h * L)));
      if (rr) z[h] = hn::Add(z[h], hn::MaskedLoad(mk, d, rr + h * L));
      hn::BlendedStore(hn::Min(hn::Max(z[h], vlo), vhi), mk, d, yr + h * L);
    }
#else
    HWY_ALIGN float g[2][kOutputGroupLanes];
    hn::Store(y0, d, g[0]);
    hn::Store(y1, d, g[1]);
    for (int64_t c = 0; c < cols; ++c) {
      float v = g[c & 1][c >> 1];
      if (rr) v += rr[c];  // (no + 0.0f without an addend: -0.0 stays -0.0)
      yr[c] = std::min(std::max(v, lo), hi);
    }
#endif
  }
}

// Rows [r0, r1) of channels [c0, c1) of the padded input xp (p's layout): a row outside
// the input is zeroed, the others go to row_fn(out, xr), out the padded row's m phases,
// xr[q] the input row's padded column q (q - pw into the row).
template <class RowFn>
HWY_INLINE void ForEachPadRow(const ConvShape& s, const WinogradPlan& p, const float* x, int64_t c0,
                              int64_t c1, int64_t r0, int64_t r1, float* xp, RowFn row_fn) {
  const int64_t H = s.in[1], W = s.in[2], ph = s.pb[1], pw = s.pb[2];
  const int64_t row = p.m * (p.tiles_w + 1);
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t r = r0; r < r1; ++r) {
      float* out = xp + (c * p.hp + r - p.row0) * row;
      const int64_t ih = r - ph;
      if (ih < 0 || ih >= H)
        std::fill(out, out + row, 0.0f);
      else
        row_fn(out, x + (c * H + ih) * W - pw);
    }
}

// winograd_pad_input for m = 2: rows of channels [c0, c1) zero-padded, each split into its
// even and odd padded columns (even[k] = X[2 k - pw], odd[k] = X[2 k + 1 - pw]). Inside
// the row a vector pair loaded at 2 k - pw gives both by ConcatEven / ConcatOdd; the ends
// by masked loads and stores on AVX2 / AVX-512, one float at a time elsewhere. (Element by
// element with a bounds check each, the pad was 0.5 ns a float: resnet18's Winograd
// layers spent ~0.7 ms a run in it, squeezenet1_1's ~0.12 ms.)
void PadInput2(const ConvShape& s, const WinogradPlan& p, const float* x, int64_t c0, int64_t c1,
               int64_t r0, int64_t r1, float* xp) {
  const int64_t W = s.in[2], pw = s.pb[2];
  const int64_t half = p.tiles_w + 1;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
#endif
#if !(HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && HWY_TARGET != HWY_SCALAR
  // Columns k whose pair (2 k - pw, 2 k + 1 - pw) lies inside the row: [k0, k1).
  const int64_t k0 = std::min(half, (pw + 1) / 2);
  const int64_t k1 = std::max(k0, std::min(half, (W + pw) / 2));
#endif
  ForEachPadRow(s, p, x, c0, c1, r0, r1, xp, [&](float* even, const float* xr) {
    float* odd = even + half;
    int64_t k = 0;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // Masked loads (zeros off the row, never touching memory there) and stores cover the
    // padding and the ends too, so rows narrower than a vector pair (13-28 wide) are not
    // done element by element.
    for (; k < half; k += L) {
      const int64_t q = 2 * k - pw;  // the pair's first input column
      const auto a = hn::MaskedLoad(LanesInRow(d, q, W), d, xr + 2 * k);
      const auto b = hn::MaskedLoad(LanesInRow(d, q + L, W), d, xr + 2 * k + L);
      if (k + L <= half) {
        hn::StoreU(hn::ConcatEven(d, b, a), d, even + k);
        hn::StoreU(hn::ConcatOdd(d, b, a), d, odd + k);
      } else {
        const auto mo = hn::FirstN(d, static_cast<size_t>(half - k));
        hn::BlendedStore(hn::ConcatEven(d, b, a), mo, d, even + k);
        hn::BlendedStore(hn::ConcatOdd(d, b, a), mo, d, odd + k);
      }
    }
#else
    auto edge = [&](int64_t k) {
      const int64_t ie = 2 * k - pw, io = ie + 1;
      even[k] = ie >= 0 && ie < W ? xr[2 * k] : 0.0f;
      odd[k] = io >= 0 && io < W ? xr[2 * k + 1] : 0.0f;
    };
#if HWY_TARGET != HWY_SCALAR
    for (; k < k0; ++k) edge(k);
    for (; k + L <= k1; k += L) {
      const hn::Vec<decltype(d)> a = hn::LoadU(d, xr + 2 * k), b = hn::LoadU(d, xr + 2 * k + L);
      hn::StoreU(hn::ConcatEven(d, b, a), d, even + k);
      hn::StoreU(hn::ConcatOdd(d, b, a), d, odd + k);
    }
#endif
    for (; k < half; ++k) edge(k);
#endif
  });
}

// ---- F(4x4, 3x3) (m = 4; winograd.cc lists its matrices). The padded rows are split
// into four phases (phase j holds columns 4 k + j, tiles_w + 1 each), so tile tw's six
// patch columns 4 tw .. 4 tw + 5 are phase[0..3][tw], phase[0..1][tw + 1]: vector loads
// along the tiles again.

// B^T along one line of six: r = B^T d (points 0, 1, -1, 1/2, -2, infinity).
template <class D, class V>
HWY_INLINE void Input1D4(D d, const V* in, V* r) {
  const V h = hn::Set(d, 0.5f), one5 = hn::Set(d, 1.5f), two = hn::Set(d, 2.0f), two5 = hn::Set(d, 2.5f);
  const V d31 = hn::Sub(in[3], in[1]), d42 = hn::Sub(in[4], in[2]);
  r[0] = hn::NegMulAdd(two, in[2], hn::MulAdd(one5, d31, hn::Add(in[0], in[4])));
  r[1] = hn::MulAdd(two5, in[3], hn::MulAdd(h, in[2], hn::Sub(in[4], in[1])));
  r[2] = hn::MulAdd(h, in[3], hn::NegMulAdd(two5, in[2], hn::Add(in[4], in[1])));
  r[3] = hn::MulAdd(two, d31, d42);
  r[4] = hn::NegMulAdd(h, d31, d42);
  r[5] = hn::MulAdd(one5, d42, hn::NegMulAdd(two, in[3], hn::Add(in[1], in[5])));
}

// V = B^T d B for a group of tiles: d[k][l] the patch, element (i, j) stored at v[(6 i + j) * vxi].
template <class D, class V>
HWY_INLINE void InputTile4(D d, const V dv[6][6], float* v, int64_t vxi) {
  V e[6][6];
  for (int k = 0; k < 6; ++k) Input1D4(d, dv[k], e[k]);
  for (int j = 0; j < 6; ++j) {
    const V col[6] = {e[0][j], e[1][j], e[2][j], e[3][j], e[4][j], e[5][j]};
    V r[6];
    Input1D4(d, col, r);
    for (int i = 0; i < 6; ++i) hn::StoreU(r[i], d, v + (6 * i + j) * vxi);
  }
}

// The input transform of kM x kM tiles (F(2x2): InputTile, F(4x4): InputTile4) over the
// lanes of one block, SIMD along the tiles: patch column j of tile tw is phase j % kM of
// the padded row at tw + j / kM (winograd_pad_input), so a group of L tiles in one tile
// row loads each patch element as one vector.
template <int kM>
void InputRuns(const WinogradXform& x, const float* xp, float* V) {
  constexpr int kN = kM + 2;
  const hn::CappedTag<float, 8> d;
  using Vec = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t TW = x.tiles_w, phase = TW + 1, row = kM * phase, plane = x.hp * row;
  int64_t at[kN];
  for (int j = 0; j < kN; ++j) at[j] = (j % kM) * phase + j / kM;
  const int64_t vxi = x.v_stride;
  auto transform = [&](const Vec (&dv)[kN][kN], float* v) {
    if constexpr (kM == 4) {
      InputTile4(d, dv, v, vxi);
    } else {
      Vec out[16];
      InputTile(dv, out);
      for (int e = 0; e < 16; ++e) hn::StoreU(out[e], d, v + e * vxi);
    }
  };
  for (int64_t c = x.c_begin; c < x.c_end; ++c) {
    const float* xc = xp + c * plane;
    for (int64_t l = 0; l < x.nt; l += L) {
      float* v = V + ((l / x.nr) * x.C + c) * x.nr + l % x.nr;
      const int64_t t = x.t0 + l, th = t / TW, tw = t % TW;
      Vec dv[kN][kN];
      if (l + L <= x.count && tw + L <= TW) {
        const float* r0 = xc + (kM * th - x.row0) * row + tw;
        for (int i = 0; i < kN; ++i)
          for (int j = 0; j < kN; ++j) dv[i][j] = hn::LoadU(d, r0 + i * row + at[j]);
        transform(dv, v);
        continue;
      }
      // A group across tile rows (or past the block's last tile): one run of tiles per
      // tile row it covers, each run's patch elements loaded as whole vectors that put
      // the run's first tile in its lane (lane a at tile ta: the loads start a floats
      // before it, in the previous row, and reach up to L - 2 floats past its row: that
      // row's padding, the next row, or plan_winograd's slack after the last plane) and
      // blended into the lanes from a on; the next run overwrites the lanes past this
      // one; zeros past the block. Then the same vector transform. (One tile at a time in
      // scalars took 4.5 % of squeezenet1_1, whose 13x13 maps have 7 tiles a row, so no
      // group of 8 lies in one; gathered lane by lane, resnet50's 14x14 layers spent
      // ~8 ns per tile and channel here, ~2.5x the time of this.)
      const int64_t n = std::max<int64_t>(0, std::min<int64_t>(L, x.count - l));  // tiles
      for (int i = 0; i < kN; ++i)
        for (int j = 0; j < kN; ++j) dv[i][j] = hn::Zero(d);
      for (int64_t a = 0; a < n;) {
        const int64_t ta = t + a, tha = ta / TW, twa = ta % TW;  // twa == 0 when a > 0
        const float* r0 = xc + (kM * tha - x.row0) * row + twa - a;
        const auto from_a = LanesFromTo(d, a, L);
        for (int i = 0; i < kN; ++i)
          for (int j = 0; j < kN; ++j)
            dv[i][j] = hn::IfThenElse(from_a, hn::LoadU(d, r0 + i * row + at[j]), dv[i][j]);
        a += std::min(n - a, TW - twa);
      }
      if (n < L) {
        const auto valid = hn::FirstN(d, static_cast<size_t>(n));
        for (int i = 0; i < kN; ++i)
          for (int j = 0; j < kN; ++j) dv[i][j] = hn::IfThenElseZero(valid, dv[i][j]);
      }
      transform(dv, v);
    }
  }
}

void InputImpl(const WinogradXform& x, const float* xp, float* V) {
  if (x.m == 4)
    InputRuns<4>(x, xp, V);
  else
    InputRuns<2>(x, xp, V);
}

// A^T along one line of six: y = A^T m.
template <class D, class V>
HWY_INLINE void Output1D4(D d, const V* m, V* y) {
  const V s = hn::Add(m[1], m[2]), df = hn::Sub(m[1], m[2]);
  y[0] = hn::Add(hn::Add(m[0], s), hn::Add(m[3], m[4]));
  y[1] = hn::NegMulAdd(hn::Set(d, 2.0f), m[4], hn::MulAdd(hn::Set(d, 0.5f), m[3], df));
  y[2] = hn::MulAdd(hn::Set(d, 4.0f), m[4], hn::MulAdd(hn::Set(d, 0.25f), m[3], s));
  y[3] = hn::Add(hn::NegMulAdd(hn::Set(d, 8.0f), m[4], hn::MulAdd(hn::Set(d, 0.125f), m[3], df)), m[5]);
}

// One group of tiles of one output channel (OutputGroup's F(4,3) form): Y = A^T M A +
// bias (+ addend), clamped, into `rows` (1-4) output rows of `cols` columns.
template <class D>
HWY_INLINE void OutputGroup4(D d, const float* q, int64_t mxi, float b, float lo, float hi, float* y,
                             const float* r, int64_t ow_stride, int rows, int64_t cols) {
  using Vec = hn::Vec<D>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  // A^T down each of M's six columns first (t[j][i]: column j, output row i), then each
  // output row's A^T along its six and stored at once: 24 vectors live between the
  // passes, where rows first and all 16 outputs before the stores kept 40 (32 registers).
  Vec t[6][4];
  for (int j = 0; j < 6; ++j) {
    const float* qj = q + j * mxi;
    const Vec mj[6] = {hn::LoadU(d, qj), hn::LoadU(d, qj + 6 * mxi), hn::LoadU(d, qj + 12 * mxi),
                       hn::LoadU(d, qj + 18 * mxi), hn::LoadU(d, qj + 24 * mxi), hn::LoadU(d, qj + 30 * mxi)};
    Output1D4(d, mj, t[j]);
  }
  const Vec vb = hn::Set(d, b), vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  for (int i = 0; i < rows; ++i) {
    const Vec row[6] = {t[0][i], t[1][i], t[2][i], t[3][i], t[4][i], t[5][i]};
    Vec z[4];
    Output1D4(d, row, z);
    for (int j = 0; j < 4; ++j) z[j] = hn::Add(z[j], vb);
    float* yr = y + i * ow_stride;
    const float* rr = r ? r + i * ow_stride : nullptr;
    if (cols == 4 * L) {
      if (rr) {
        Vec a0, a1, a2, a3;
        hn::LoadInterleaved4(d, rr, a0, a1, a2, a3);
        z[0] = hn::Add(z[0], a0);
        z[1] = hn::Add(z[1], a1);
        z[2] = hn::Add(z[2], a2);
        z[3] = hn::Add(z[3], a3);
      }
      for (int j = 0; j < 4; ++j) z[j] = hn::Min(hn::Max(z[j], vlo), vhi);
      hn::StoreInterleaved4(z[0], z[1], z[2], z[3], d, yr);
      continue;
    }
    // A part group (a run's last, or the map's edge): interleaved through the stack,
    // then stored masked to `cols` (one float at a time where masked stores are not
    // native), never touching memory past them.
    HWY_ALIGN float g[4 * kOutputGroupLanes];
    hn::StoreInterleaved4(z[0], z[1], z[2], z[3], d, g);
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    for (int64_t h = 0; h * L < cols; ++h) {
      const auto mk = hn::FirstN(d, static_cast<size_t>(std::min(L, cols - h * L)));
      Vec zh = hn::Load(d, g + h * L);
      if (rr) zh = hn::Add(zh, hn::MaskedLoad(mk, d, rr + h * L));
      hn::BlendedStore(hn::Min(hn::Max(zh, vlo), vhi), mk, d, yr + h * L);
    }
#else
    for (int64_t c = 0; c < cols; ++c) {
      float v = g[c];
      if (rr) v += rr[c];
      yr[c] = std::min(std::max(v, lo), hi);
    }
#endif
  }
}

// Tiles of kM x kM outputs: OutputGroup (F(2x2)) or OutputGroup4 (F(4x4)) on each group.
template <int kM>
void OutputRuns(const WinogradXform& x, const float* Mb, const float* bias, float lo, float hi,
                float* y, const float* addend) {
  // Groups of up to 16 tiles (AVX-512; 8 on AVX2, 4 on SSE4 / NEON), and of 8 where at
  // most 8 are left in the run (the 7-tile rows of 13x13 and 14x14 maps). Zen 5, against
  // 8-lane groups throughout (bench/inproc_ab, 30 blocks of 10 runs): squeezenet1_1 0.986x
  // the time at 1 thread, 0.991x at 2 (its 55x55 and 27x27 expands, where the transform
  // was a quarter of a 16-channel layer's time); resnet50 unchanged (0.999x).
  const hn::CappedTag<float, kOutputGroupLanes> d;
  const hn::CappedTag<float, kOutputGroupLanes / 2> dh;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d)), LH = static_cast<int64_t>(hn::Lanes(dh));
  const int64_t TW = x.tiles_w, OH = x.out_h, OW = x.out_w, mxi = x.m_stride;
  const int64_t t_end = x.t0 + x.count;
  for (int64_t m = x.m_begin; m < x.m_end; ++m) {
    const float b = bias ? bias[m] : 0.0f;
    float* ym = y + m * OH * OW;
    const float* rm = addend ? addend + m * OH * OW : nullptr;
    const float* mm = Mb + (m - x.m_row0) * x.nt;
    // Groups of tiles from the start of each tile row's run in the block (not at
    // multiples of L along the block): every group lies in one tile row, and only a run's
    // last group, which meets the row's end (or the block's), has fewer than L tiles or
    // ends at the map's edge. Aligned to the block, the groups straddled tile rows on every
    // map whose rows are not a multiple of L tiles (7 tiles on 13x13 and 14x14, 14 on
    // 27x27, 28 on 55x55: squeezenet1_1 spent 10 % of its time here). A group reads
    // M's lanes from its first tile: up to L - 1 past the block's last one, and those
    // lanes are never stored. With one block they are inside the M row's nt lanes
    // (plan_winograd leaves room: the workers share that M by rows); with several, each
    // worker's own M, they may be the next row's first lanes or the 16 floats
    // winograd_stride leaves after each matrix.
    for (int64_t t = x.t0; t < t_end;) {
      const int64_t th = t / TW, tw0 = t % TW, run = std::min(t_end - t, TW - tw0);
      const int64_t oh = kM * th;
      const int rows = static_cast<int>(std::min<int64_t>(kM, OH - oh));
      for (int64_t k = 0; k < run;) {
        const int64_t l = t - x.t0 + k, ow = kM * (tw0 + k);
        const bool half = L > LH && run - k <= LH;
        const int64_t n = std::min(half ? LH : L, run - k);  // tiles in this group
        const int64_t cols = std::min(kM * n, OW - ow);      // output columns they cover
        float* yg = ym + oh * OW + ow;
        const float* rg = rm ? rm + oh * OW + ow : nullptr;
        if (kM == 4 && half)
          OutputGroup4(dh, mm + l, mxi, b, lo, hi, yg, rg, OW, rows, cols);
        else if (kM == 4)
          OutputGroup4(d, mm + l, mxi, b, lo, hi, yg, rg, OW, rows, cols);
        else if (half)
          OutputGroup(dh, mm + l, mxi, b, lo, hi, yg, rg, OW, rows, cols);
        else
          OutputGroup(d, mm + l, mxi, b, lo, hi, yg, rg, OW, rows, cols);
        k += n;
      }
      t += run;
    }
  }
}

void OutputImpl(const WinogradXform& x, const float* Mb, const float* bias, float lo, float hi,
                float* y, const float* addend) {
  if (x.m == 4)
    OutputRuns<4>(x, Mb, bias, lo, hi, y, addend);
  else
    OutputRuns<2>(x, Mb, bias, lo, hi, y, addend);
}

// winograd_pad_input for m = 4: rows of channels [c0, c1), rows [r0, r1), split into four
// phases (phase j [k] = X[4 k + j - pw], zero outside the row). On AVX2 / AVX-512 four
// masked loads of a group's 4 L columns are deinterleaved through the stack; elsewhere
// LoadInterleaved4 where the group lies inside the row, one float at a time at the ends.
void PadInput4(const ConvShape& s, const WinogradPlan& p, const float* x, int64_t c0, int64_t c1,
               int64_t r0, int64_t r1, float* xp) {
  const int64_t W = s.in[2], pw = s.pb[2];
  const int64_t phase = p.tiles_w + 1;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> d;
  using Vec = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
#endif
  ForEachPadRow(s, p, x, c0, c1, r0, r1, xp, [&](float* out, const float* xr) {
    int64_t k = 0;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    HWY_ALIGN float g[4 * kOutputGroupLanes];  // four vectors of at most 16 lanes
    for (; k < phase; k += L) {
      for (int64_t i = 0; i < 4; ++i) {
        const int64_t q = 4 * k - pw + i * L;
        hn::Store(hn::MaskedLoad(LanesInRow(d, q, W), d, xr + 4 * k + i * L), d, g + i * L);
      }
      Vec a[4];
      hn::LoadInterleaved4(d, g, a[0], a[1], a[2], a[3]);
      const auto mo = hn::FirstN(d, static_cast<size_t>(std::min(L, phase - k)));
      for (int j = 0; j < 4; ++j) hn::BlendedStore(a[j], mo, d, out + j * phase + k);
    }
#else
    auto edge = [&](int64_t k) {
      for (int j = 0; j < 4; ++j) {
        const int64_t q = 4 * k + j - pw;
        out[j * phase + k] = q >= 0 && q < W ? xr[4 * k + j] : 0.0f;
      }
    };
#if HWY_TARGET != HWY_SCALAR
    const int64_t k0 = std::min(phase, (pw + 3) / 4);  // first k whose columns are all in the row
    for (; k < k0; ++k) edge(k);
    for (; k + L <= phase && 4 * (k + L) - pw <= W; k += L) {
      Vec a[4];
      hn::LoadInterleaved4(d, xr + 4 * k, a[0], a[1], a[2], a[3]);
      for (int j = 0; j < 4; ++j) hn::StoreU(a[j], d, out + j * phase + k);
    }
#endif
    for (; k < phase; ++k) edge(k);
#endif
  });
}

void PadInputImpl(const ConvShape& s, const WinogradPlan& p, const float* x, int64_t c0, int64_t c1,
                  int64_t r0, int64_t r1, float* xp) {
  if (p.m == 4)
    PadInput4(s, p, x, c0, c1, r0, r1, xp);
  else
    PadInput2(s, p, x, c0, c1, r0, r1, xp);
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

HWY_EXPORT(InputImpl);
HWY_EXPORT(OutputImpl);
HWY_EXPORT(PadInputImpl);

void winograd_pad_input(const ConvShape& s, const WinogradPlan& p, const float* x, int64_t c0,
                        int64_t c1, float* xp) {
  HWY_DYNAMIC_DISPATCH(PadInputImpl)(s, p, x, c0, c1, p.row0, p.row0 + p.hp, xp);
}

void winograd_pad_input_rows(const ConvShape& s, const WinogradPlan& p, const float* x, int64_t r0,
                             int64_t r1, float* xp) {
  HWY_DYNAMIC_DISPATCH(PadInputImpl)(s, p, x, 0, s.C, r0, r1, xp);
}

void winograd_input_transform(const WinogradXform& x, const float* xp, float* v) {
  HWY_DYNAMIC_DISPATCH(InputImpl)(x, xp, v);
}
void winograd_output_transform(const WinogradXform& x, const float* m, const float* bias,
                               float lo, float hi, float* y, const float* addend) {
  HWY_DYNAMIC_DISPATCH(OutputImpl)(x, m, bias, lo, hi, y, addend);
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
#endif
