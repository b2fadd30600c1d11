// SIMD kernels (Highway, compiled once per target by foreach_target.h and dispatched at
// run time). Written without arrays of vectors or vectors in structs/lambdas, so the
// sizeless SVE types compile too; every accumulator is a named variable.
//
// Tails: never a masked load (Highway 1.0.3 emulates MaskedLoad on NEON/SSE4 with a
// full-width load). When the row stride of x has room for the last partial vector (the
// caller padded x: conv.cc does, see spmm_lanes()), that vector is computed whole and
// stored in part through a buffer; otherwise the leftover columns are done in scalar code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels.h"

#include <algorithm>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_sparse {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }
int64_t LanesImpl() { return static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>())); }

#if HWY_TARGET == HWY_SCALAR
// One lane: the reference loops are as good as anything written here.
void SpmmImpl(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  spmm_ref(w, a, rb0, rb1);
}
int TileWidthImpl() { return 0; }
void RowsImpl(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  if (w.panels() > 0) return rows_panels_ref(w, a, rb0, rb1);
  rows_ref(w, a, rb0, rb1);
}
#else

// y = clamp(acc (+ beta * y)), full vector. `a` is the SpmmArgs (beta, lo, hi).
template <class D, class V, class A>
HWY_INLINE void StoreOut(D d, V acc, const A& a, float* p) {
  if (a.beta != 0.0f) acc = hn::MulAdd(hn::Set(d, a.beta), hn::LoadU(d, p), acc);
  acc = hn::Min(hn::Max(acc, hn::Set(d, a.lo)), hn::Set(d, a.hi));
  hn::StoreU(acc, d, p);
}

// Scalar remainder of the columns [j0, J) for one output row n of a 1xC / Rx1 matrix.
inline void spmm_tail(const SparseMatrix& w, const SpmmArgs& a, int64_t br, int r,
                      int64_t j0) {
  const int R = w.shape.r, C = w.shape.c;
  const int64_t n = br * R + r;
  float* yr = a.y + n * a.ldy;
  for (int64_t j = j0; j < a.J; ++j) {
    float acc = a.bias ? a.bias[n] : 0.0f;
    for (int32_t b = w.row_ptr[br]; b < w.row_ptr[br + 1]; ++b) {
      const float* wb = w.values.data() + static_cast<int64_t>(b) * R * C + r * C;
      for (int c = 0; c < C; ++c) acc += wb[c] * a.x[(w.col[b] + c) * a.ldx + j];
    }
    yr[j] = clamp_out(a.beta != 0.0f ? acc + a.beta * yr[j] : acc, a.lo, a.hi);
  }
}

// Widest vector of floats any compiled target has (SVE: up to 2048 bits).
constexpr size_t kMaxFloatLanes = HWY_MAX_BYTES / sizeof(float);

// The first n lanes of acc (+ beta * y) into p: the partial last vector of a row, stored
// through a buffer so nothing past the row is written (another thread may own it).
template <class D, class V, class A>
HWY_INLINE void StoreOutN(D d, V acc, const A& a, float* p, int64_t n) {
  HWY_ALIGN float buf[kMaxFloatLanes];
  hn::Store(acc, d, buf);
  for (int64_t i = 0; i < n; ++i) p[i] = clamp_out(a.beta != 0.0f ? buf[i] + a.beta * p[i] : buf[i], a.lo, a.hi);
}

template <class D, class V, class A>
HWY_INLINE void StoreOutLast(D d, V acc, const A& a, float* p, int64_t n, int64_t L) {
  if (n == L) StoreOut(d, acc, a, p);
  else StoreOutN(d, acc, a, p, n);
}

// Whole vectors of columns the kernels may compute for J columns: with a row stride that
// has room for the last partial vector (ldx >= J rounded up), that vector is loaded whole
// and stored in part; otherwise the leftover columns go to the scalar tail.
inline int64_t vector_count(int64_t J, int64_t ldx, int64_t L, bool* padded) {
  const int64_t up = (J + L - 1) / L;
  *padded = up * L <= ldx;
  return *padded ? up : J / L;
}

#define MN_V8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

// 1xC blocks (CSR when C == 1), one strip of V vectors of columns from j, every row of
// [rb0, rb1): the row's V accumulators stay in registers while its blocks stream by, one
// broadcast of each weight feeding V multiply-adds. With kDual (V <= 4) a second set of
// accumulators takes every other weight, so at least 8 independent FMA chains hide the
// FMA latency even on a short strip (the small-spatial layers, 7x7 = 49 columns). The
// last vector holds `last` valid columns.
template <int C, int V, bool kDual>
HWY_NOINLINE void Spmm1Strip(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1,
                             int64_t j, int64_t last) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float* vals = w.values.data();
  const int32_t* col = w.col.data();
  const int32_t* rp = w.row_ptr.data();
  const int64_t ldx = a.ldx;
  const float* xj = a.x + j;
  for (int64_t n = rb0; n < rb1; ++n) {
    const auto bv = hn::Set(d, a.bias ? a.bias[n] : 0.0f);
    const auto z = hn::Zero(d);
#define MN_INIT(i) auto a##i = bv; auto b##i = z;
    MN_V8(MN_INIT)
#undef MN_INIT
#define MN_FMA(acc, i, wv, xr) if constexpr (V > i) acc##i = hn::MulAdd(wv, hn::LoadU(d, xr + i * L), acc##i);
#define MN_A(i) MN_FMA(a, i, wv, xr)
#define MN_B(i) MN_FMA(b, i, wv, xr)
    int32_t b = rp[n];
    const int32_t e = rp[n + 1];
    if constexpr (C == 1 && kDual) {
      for (; b + 2 <= e; b += 2) {
        const auto w0 = hn::Set(d, vals[b]), w1 = hn::Set(d, vals[b + 1]);
        const float* x0 = xj + static_cast<int64_t>(col[b]) * ldx;
        const float* x1 = xj + static_cast<int64_t>(col[b + 1]) * ldx;
#define MN_P(i) MN_FMA(a, i, w0, x0) MN_FMA(b, i, w1, x1)
        MN_V8(MN_P)
#undef MN_P
      }
    }
    for (; b < e; ++b) {
      const float* wb = vals + static_cast<int64_t>(b) * C;
      const float* xb = xj + static_cast<int64_t>(col[b]) * ldx;
      for (int c = 0; c < C; ++c) {
        const auto wv = hn::Set(d, wb[c]);
        const float* xr = xb + c * ldx;
        if (kDual && (c & 1)) {
          MN_V8(MN_B)
        } else {
          MN_V8(MN_A)
        }
      }
    }
#undef MN_A
#undef MN_B
#undef MN_FMA
    float* yr = a.y + n * a.ldy + j;
#define MN_OUT(i)                                                          \
  if constexpr (V > i) {                                                   \
    if constexpr (kDual) a##i = hn::Add(a##i, b##i);                       \
    if (i + 1 < V) StoreOut(d, a##i, a, yr + i * L);                       \
    else StoreOutLast(d, a##i, a, yr + i * L, last, L);                    \
  }                                                                        \
  (void)a##i;                                                              \
  (void)b##i;
    MN_V8(MN_OUT)
#undef MN_OUT
  }
}

// Output rows per pass over the strips (Spmm1; Spmm4 runs a block row's strips together
// already). With every row of a large layer
// in one pass (mobilenet_v2's 144 x 56x56), a strip stores into 144 rows 12.5 KB apart and
// each line is fetched for ownership on its own; 16 rows at a time are 16 long runs of
// stores that the hardware prefetchers follow. 144 x 56x56 from 24 channels at 90 % with
// the caches cold (as in a model, after other layers): 84-87 against 150-155 us (Xeon,
// kernel alone); warm, within 3 %. The x strips are read again per pass, from L2.
constexpr int64_t kSpmmRowBlock = 16;

template <int C>
HWY_NOINLINE void Spmm1Rows(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1);

template <int C>
HWY_NOINLINE void Spmm1(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  for (int64_t r = rb0; r < rb1; r += kSpmmRowBlock)
    Spmm1Rows<C>(w, a, r, std::min(rb1, r + kSpmmRowBlock));
}

template <int C>
HWY_NOINLINE void Spmm1Rows(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  bool padded = false;
  const int64_t nv = vector_count(a.J, a.ldx, L, &padded);
  // Strips of at most 8 vectors, as even as possible (25 vectors: 7+6+6+6, not 8+8+8+1).
  const int64_t strips = (nv + 7) / 8;
  int64_t j = 0;
  for (int64_t s = 0; s < strips; ++s) {
    const int64_t v = nv / strips + (s < nv % strips ? 1 : 0);
    const int64_t last = s + 1 == strips && padded ? a.J - (j + (v - 1) * L) : L;
    switch (v) {
      case 1: Spmm1Strip<C, 1, true>(w, a, rb0, rb1, j, last); break;
      case 2: Spmm1Strip<C, 2, true>(w, a, rb0, rb1, j, last); break;
      case 3: Spmm1Strip<C, 3, true>(w, a, rb0, rb1, j, last); break;
      case 4: Spmm1Strip<C, 4, true>(w, a, rb0, rb1, j, last); break;
      case 5: Spmm1Strip<C, 5, false>(w, a, rb0, rb1, j, last); break;
      case 6: Spmm1Strip<C, 6, false>(w, a, rb0, rb1, j, last); break;
      case 7: Spmm1Strip<C, 7, false>(w, a, rb0, rb1, j, last); break;
      default: Spmm1Strip<C, 8, false>(w, a, rb0, rb1, j, last); break;
    }
    j += v * L;
  }
  if (j < a.J)
    for (int64_t n = rb0; n < rb1; ++n) spmm_tail(w, a, n, 0, j);
}

// 4x1 blocks: one load of x feeds four output rows; a strip of V (1 or 2) vectors keeps
// 4 * V accumulators.
template <int V>
HWY_INLINE void Spmm4Strip(const SparseMatrix& w, const SpmmArgs& a, int64_t br, int valid,
                           const float* bias, int64_t j, int64_t last) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float* vals = w.values.data();
  const int32_t* col = w.col.data();
  const int32_t* rp = w.row_ptr.data();
  auto c00 = hn::Set(d, bias[0]), c10 = hn::Set(d, bias[1]);
  auto c20 = hn::Set(d, bias[2]), c30 = hn::Set(d, bias[3]);
  auto c01 = c00, c11 = c10, c21 = c20, c31 = c30;
  for (int32_t b = rp[br]; b < rp[br + 1]; ++b) {
    const float* wb = vals + static_cast<int64_t>(b) * 4;
    const float* xr = a.x + static_cast<int64_t>(col[b]) * a.ldx + j;
    const auto w0 = hn::Set(d, wb[0]), w1 = hn::Set(d, wb[1]);
    const auto w2 = hn::Set(d, wb[2]), w3 = hn::Set(d, wb[3]);
    const auto x0 = hn::LoadU(d, xr);
    c00 = hn::MulAdd(w0, x0, c00);
    c10 = hn::MulAdd(w1, x0, c10);
    c20 = hn::MulAdd(w2, x0, c20);
    c30 = hn::MulAdd(w3, x0, c30);
    if constexpr (V > 1) {
      const auto x1 = hn::LoadU(d, xr + L);
      c01 = hn::MulAdd(w0, x1, c01);
      c11 = hn::MulAdd(w1, x1, c11);
      c21 = hn::MulAdd(w2, x1, c21);
      c31 = hn::MulAdd(w3, x1, c31);
    }
  }
  float* y0 = a.y + br * 4 * a.ldy + j;
  const int64_t l0 = V == 1 ? last : L;
  StoreOutLast(d, c00, a, y0, l0, L);
  if (valid > 1) StoreOutLast(d, c10, a, y0 + a.ldy, l0, L);
  if (valid > 2) StoreOutLast(d, c20, a, y0 + 2 * a.ldy, l0, L);
  if (valid > 3) StoreOutLast(d, c30, a, y0 + 3 * a.ldy, l0, L);
  if constexpr (V > 1) {
    StoreOutLast(d, c01, a, y0 + L, last, L);
    if (valid > 1) StoreOutLast(d, c11, a, y0 + a.ldy + L, last, L);
    if (valid > 2) StoreOutLast(d, c21, a, y0 + 2 * a.ldy + L, last, L);
    if (valid > 3) StoreOutLast(d, c31, a, y0 + 3 * a.ldy + L, last, L);
  }
}

HWY_NOINLINE void Spmm4(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  bool padded = false;
  const int64_t nv = vector_count(a.J, a.ldx, L, &padded);
  const int64_t last_cols = padded ? a.J - (nv - 1) * L : L;
  for (int64_t br = rb0; br < rb1; ++br) {
    const int64_t n0 = br * 4;
    const int valid = static_cast<int>(std::min<int64_t>(4, w.rows - n0));
    float bias[4] = {0, 0, 0, 0};
    for (int r = 0; r < valid; ++r) bias[r] = a.bias ? a.bias[n0 + r] : 0.0f;
    int64_t v = 0;
    for (; v + 2 <= nv; v += 2)
      Spmm4Strip<2>(w, a, br, valid, bias, v * L, v + 2 == nv ? last_cols : L);
    if (v < nv) Spmm4Strip<1>(w, a, br, valid, bias, v * L, last_cols);
    if (nv * L < a.J)
      for (int r = 0; r < valid; ++r) spmm_tail(w, a, br, r, nv * L);
  }
}


void SpmmImpl(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  const BlockShape s = w.shape;
  if (s == BlockShape{1, 1}) return Spmm1<1>(w, a, rb0, rb1);
  if (s == BlockShape{1, 4}) return Spmm1<4>(w, a, rb0, rb1);
  if (s == BlockShape{1, 8}) return Spmm1<8>(w, a, rb0, rb1);
  if (s == BlockShape{4, 1}) return Spmm4(w, a, rb0, rb1);
  spmm_ref(w, a, rb0, rb1);  // a shape without a tuned kernel still computes correctly
}

inline float finish(float acc, const RowsArgs& a, int64_t n, float* yr) {
  if (a.bias) acc += a.bias[n];
  return clamp_out(a.beta != 0.0f ? acc + a.beta * yr[n] : acc, a.lo, a.hi);
}

// CSR dot products: whole vectors of nonzeros with a gather of x, two accumulators to
// hide the FMA latency, then the scalar remainder.
HWY_NOINLINE void Rows11(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int32_t L = static_cast<int32_t>(hn::Lanes(d));
  const float* vals = w.values.data();
  const int32_t* col = w.col.data();
  const int32_t* rp = w.row_ptr.data();
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
    for (int64_t n = rb0; n < rb1; ++n) {
      int32_t b = rp[n];
      const int32_t e = rp[n + 1];
      auto s0 = hn::Zero(d), s1 = hn::Zero(d);
      for (; b + 2 * L <= e; b += 2 * L) {
        s0 = hn::MulAdd(hn::LoadU(d, vals + b), hn::GatherIndex(d, xr, hn::LoadU(di, col + b)), s0);
        s1 = hn::MulAdd(hn::LoadU(d, vals + b + L),
                        hn::GatherIndex(d, xr, hn::LoadU(di, col + b + L)), s1);
      }
      for (; b + L <= e; b += L)
        s0 = hn::MulAdd(hn::LoadU(d, vals + b), hn::GatherIndex(d, xr, hn::LoadU(di, col + b)), s0);
      float acc = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
      for (; b < e; ++b) acc += vals[b] * xr[col[b]];
      yr[n] = finish(acc, a, n, yr);
    }
  }
}

// 1xC blocks: each block is C contiguous weights against C contiguous x.
template <int C>
HWY_NOINLINE void Rows1(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  const hn::CappedTag<float, C> d;
  const int nc = static_cast<int>(hn::Lanes(d));
  const float* vals = w.values.data();
  const int32_t* col = w.col.data();
  const int32_t* rp = w.row_ptr.data();
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
    for (int64_t n = rb0; n < rb1; ++n) {
      auto s0 = hn::Zero(d), s1 = hn::Zero(d);
      int32_t b = rp[n];
      const int32_t e = rp[n + 1];
      for (; b + 2 <= e; b += 2) {
        const float* w0 = vals + static_cast<int64_t>(b) * C;
        for (int c = 0; c < C; c += nc) {
          s0 = hn::MulAdd(hn::LoadU(d, w0 + c), hn::LoadU(d, xr + col[b] + c), s0);
          s1 = hn::MulAdd(hn::LoadU(d, w0 + C + c), hn::LoadU(d, xr + col[b + 1] + c), s1);
        }
      }
      for (; b < e; ++b)
        for (int c = 0; c < C; c += nc)
          s0 = hn::MulAdd(hn::LoadU(d, vals + static_cast<int64_t>(b) * C + c),
                          hn::LoadU(d, xr + col[b] + c), s0);
      yr[n] = finish(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1))), a, n, yr);
    }
  }
}

// 4x1 blocks: each block is one x value broadcast against four outputs' weights.
HWY_NOINLINE void Rows4(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  const hn::CappedTag<float, 4> d;
  if (hn::Lanes(d) != 4) return rows_ref(w, a, rb0, rb1);
  const float* vals = w.values.data();
  const int32_t* col = w.col.data();
  const int32_t* rp = w.row_ptr.data();
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
    for (int64_t br = rb0; br < rb1; ++br) {
      auto s0 = hn::Zero(d), s1 = hn::Zero(d);
      int32_t b = rp[br];
      const int32_t e = rp[br + 1];
      for (; b + 2 <= e; b += 2) {
        s0 = hn::MulAdd(hn::LoadU(d, vals + static_cast<int64_t>(b) * 4), hn::Set(d, xr[col[b]]), s0);
        s1 = hn::MulAdd(hn::LoadU(d, vals + static_cast<int64_t>(b) * 4 + 4),
                        hn::Set(d, xr[col[b + 1]]), s1);
      }
      if (b < e)
        s0 = hn::MulAdd(hn::LoadU(d, vals + static_cast<int64_t>(b) * 4), hn::Set(d, xr[col[b]]), s0);
      HWY_ALIGN float out[4];
      hn::Store(hn::Add(s0, s1), d, out);
      const int64_t n0 = br * 4;
      const int valid = static_cast<int>(std::min<int64_t>(4, w.rows - n0));
      for (int r = 0; r < valid; ++r) yr[n0 + r] = finish(out[r], a, n0 + r, yr);
    }
  }
}

// x[c[0..Lanes)]: one step of a row panel. On x86 the eight 16-bit columns come in two
// 64-bit loads and are taken apart with shifts, and eight scalar loads of x are assembled
// into a vector: per eight nonzeros 11 loads instead of 17 (8 column loads, 8 x loads, the
// values), and loads are what bounds this kernel (Zen 3 issues three a cycle). On the AMD
// EPYC build machine (Zen 3) scalar loads are also 1.5x faster than vgatherdps (fc 784x300
// at 90 %: 7.4 vs 11.5 us per run). Other targets use Highway's GatherIndex (SVE gathers;
// NEON emulates it with the same loads).
template <class D>
HWY_INLINE hn::Vec<D> GatherCols(D d, const float* xr, const uint16_t* c) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  static_assert(hn::MaxLanes(D()) == 8, "x86 row panels are 8 lanes");
  (void)d;
  uint64_t c03, c47;
  std::memcpy(&c03, c, 8);
  std::memcpy(&c47, c + 4, 8);
  const __m128 lo = _mm_setr_ps(xr[c03 & 0xffff], xr[(c03 >> 16) & 0xffff],
                                xr[(c03 >> 32) & 0xffff], xr[c03 >> 48]);
  const __m128 hi = _mm_setr_ps(xr[c47 & 0xffff], xr[(c47 >> 16) & 0xffff],
                                xr[(c47 >> 32) & 0xffff], xr[c47 >> 48]);
  return hn::Vec<D>{_mm256_set_m128(hi, lo)};
#else
  const hn::RebindToSigned<D> di;
  const hn::Rebind<uint16_t, D> d16;
  return hn::GatherIndex(d, xr, hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<D>(), hn::LoadU(d16, c))));
#endif
}

// Writes the sums of `slots` consecutive panel slots (buf[i] is slot i from rowp) to y as
// finish() would; padding slots (-1) are skipped. The panel kernels store each panel's
// sums whole into a buffer on the stack and call this once per kPanelChunk panels: at
// batch 1 a panel is only a few steps (about ten on the lstm gates), and taking its eight
// sums apart lane by lane, with a branch per lane, cost about as much as the steps. Here it
// is one predictable loop. bias and beta are read into locals first: the stores through
// yr could alias them otherwise, and the compiler would reload them after every store.
constexpr int64_t kPanelChunk = 32;
inline void FlushPanels(const float* buf, const int32_t* rowp, int64_t slots, const RowsArgs& a,
                        float* yr) {
  const float* bias = a.bias;
  const float beta = a.beta, lo = a.lo, hi = a.hi;
  const bool clamp = lo > -std::numeric_limits<float>::infinity() || hi < std::numeric_limits<float>::infinity();
  if (beta == 0.0f && !bias && !clamp) {
    for (int64_t i = 0; i < slots; ++i)
      if (rowp[i] >= 0) yr[rowp[i]] = buf[i];
    return;
  }
  for (int64_t i = 0; i < slots; ++i) {
    const int32_t n = rowp[i];
    if (n < 0) continue;
    float v = buf[i];
    if (bias) v += bias[n];
    if (beta != 0.0f) v += beta * yr[n];
    yr[n] = clamp_out(v, lo, hi);
  }
}

// CSR row panels (sparse_matrix.h): one lane per output row, a step is a load of the
// panel's values, the x values under its columns, and one multiply-add; no horizontal
// sums, no per-row loop overhead. Lanes < 8 (NEON, SSE4) take a panel in two vectors.
HWY_NOINLINE void RowsPanels1(const SparseMatrix& w, const RowsArgs& a, int64_t p0, int64_t p1) {
  constexpr int P = SparseMatrix::kPanel;
  const hn::CappedTag<float, P> d;
  const int NL = static_cast<int>(hn::Lanes(d));
  const float* vals = w.panel_val.data();
  const uint16_t* cols = w.panel_col.data();
  const int32_t* pp = w.panel_ptr.data();
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
    for (int64_t c0 = p0; c0 < p1; c0 += kPanelChunk) {
      const int64_t c1 = std::min(p1, c0 + kPanelChunk);
      HWY_ALIGN float buf[kPanelChunk * P];
      for (int64_t p = c0; p < c1; ++p) {
        const int32_t e = pp[p + 1];
        for (int h = 0; h < P; h += NL) {
          auto s0 = hn::Zero(d);
          // Offsets taken only for steps that exist: an all-zero matrix has no storage
          // (null data), and even null + h is undefined.
          for (int32_t t = pp[p]; t < e; ++t) {
            const int64_t o = static_cast<int64_t>(t) * P + h;
            s0 = hn::MulAdd(hn::LoadU(d, vals + o), GatherCols(d, xr, cols + o), s0);
          }
          hn::Store(s0, d, buf + (p - c0) * P + h);
        }
      }
      FlushPanels(buf, w.panel_row.data() + c0 * P, (c1 - c0) * P, a, yr);
    }
  }
}

// Stores the eight sums of one panel (lane r = row slot r), for kernels that keep them in
// an array anyway.
inline void StorePanel(const float* out, const int32_t* rowp, const RowsArgs& a, float* yr) {
  FlushPanels(out, rowp, SparseMatrix::kPanel, a, yr);
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// The lane of the 1x4 kernel's three rounds of hadd that holds each row slot's sum.
inline __m256i SlotOrder() { return _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); }
// 1x4 row panels on x86: vector k of a step holds the blocks of row slots 2k and 2k+1
// (8 contiguous weights against two 128-bit loads of x), four accumulators; three rounds
// of hadd then give the eight row sums, in the lane order 0 2 4 6 1 3 5 7 (one vpermps
// puts them in slot order).
HWY_NOINLINE void RowsPanels4(const SparseMatrix& w, const RowsArgs& a, int64_t p0, int64_t p1) {
  constexpr int P = SparseMatrix::kPanel;
  const float* vals = w.panel_val.data();
  const uint16_t* cols = w.panel_col.data();
  const int32_t* pp = w.panel_ptr.data();
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
    for (int64_t c0 = p0; c0 < p1; c0 += kPanelChunk) {
      const int64_t c1 = std::min(p1, c0 + kPanelChunk);
      HWY_ALIGN float buf[kPanelChunk * P];
      for (int64_t p = c0; p < c1; ++p) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        const float* v = vals + static_cast<int64_t>(pp[p]) * P * 4;
        const uint16_t* c = cols + static_cast<int64_t>(pp[p]) * P;
        for (int32_t t = pp[p]; t < pp[p + 1]; ++t, v += P * 4, c += P) {
          uint64_t c03, c47;  // the eight columns in two loads, as GatherCols
          std::memcpy(&c03, c, 8);
          std::memcpy(&c47, c + 4, 8);
          s0 = _mm256_fmadd_ps(_mm256_loadu_ps(v), _mm256_loadu2_m128(xr + ((c03 >> 16) & 0xffff), xr + (c03 & 0xffff)), s0);
          s1 = _mm256_fmadd_ps(_mm256_loadu_ps(v + 8), _mm256_loadu2_m128(xr + (c03 >> 48), xr + ((c03 >> 32) & 0xffff)), s1);
          s2 = _mm256_fmadd_ps(_mm256_loadu_ps(v + 16), _mm256_loadu2_m128(xr + ((c47 >> 16) & 0xffff), xr + (c47 & 0xffff)), s2);
          s3 = _mm256_fmadd_ps(_mm256_loadu_ps(v + 24), _mm256_loadu2_m128(xr + (c47 >> 48), xr + ((c47 >> 32) & 0xffff)), s3);
        }
        const __m256 q = _mm256_hadd_ps(_mm256_hadd_ps(s0, s1), _mm256_hadd_ps(s2, s3));
        _mm256_store_ps(buf + (p - c0) * P, _mm256_permutevar8x32_ps(q, SlotOrder()));
      }
      FlushPanels(buf, w.panel_row.data() + c0 * P, (c1 - c0) * P, a, yr);
    }
  }
}
#else
// 1x4 row panels elsewhere: one 4-lane accumulator per row slot, summed once per panel.
HWY_NOINLINE void RowsPanels4(const SparseMatrix& w, const RowsArgs& a, int64_t p0, int64_t p1) {
  constexpr int P = SparseMatrix::kPanel;
  const hn::CappedTag<float, 4> d;
  if (hn::Lanes(d) != 4) return rows_panels_ref(w, a, p0, p1);
  const float* vals = w.panel_val.data();
  const uint16_t* cols = w.panel_col.data();
  const int32_t* pp = w.panel_ptr.data();
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
    for (int64_t p = p0; p < p1; ++p) {
      auto s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
      const float* v = vals + static_cast<int64_t>(pp[p]) * P * 4;
      const uint16_t* c = cols + static_cast<int64_t>(pp[p]) * P;
      for (int32_t t = pp[p]; t < pp[p + 1]; ++t, v += P * 4, c += P) {
        s0 = hn::MulAdd(hn::LoadU(d, v), hn::LoadU(d, xr + c[0]), s0);
        s1 = hn::MulAdd(hn::LoadU(d, v + 4), hn::LoadU(d, xr + c[1]), s1);
        s2 = hn::MulAdd(hn::LoadU(d, v + 8), hn::LoadU(d, xr + c[2]), s2);
        s3 = hn::MulAdd(hn::LoadU(d, v + 12), hn::LoadU(d, xr + c[3]), s3);
        s4 = hn::MulAdd(hn::LoadU(d, v + 16), hn::LoadU(d, xr + c[4]), s4);
        s5 = hn::MulAdd(hn::LoadU(d, v + 20), hn::LoadU(d, xr + c[5]), s5);
        s6 = hn::MulAdd(hn::LoadU(d, v + 24), hn::LoadU(d, xr + c[6]), s6);
        s7 = hn::MulAdd(hn::LoadU(d, v + 28), hn::LoadU(d, xr + c[7]), s7);
      }
      const float out[P] = {
          hn::GetLane(hn::SumOfLanes(d, s0)), hn::GetLane(hn::SumOfLanes(d, s1)),
          hn::GetLane(hn::SumOfLanes(d, s2)), hn::GetLane(hn::SumOfLanes(d, s3)),
          hn::GetLane(hn::SumOfLanes(d, s4)), hn::GetLane(hn::SumOfLanes(d, s5)),
          hn::GetLane(hn::SumOfLanes(d, s6)), hn::GetLane(hn::SumOfLanes(d, s7))};
      StorePanel(out, w.panel_row.data() + p * P, a, yr);
    }
  }
}
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// Tiled panels (SparseMatrix::tiled): a step is one load of the W x values of its window,
// one permute that hands each row slot its own (the weights' low bits are the
// permutation), and one multiply-add with the step's W weights: three vector instructions
// and three loads for W slots, where a CSR panel step takes about thirty instructions and
// eleven loads for eight. Eight accumulators, eight steps per loop: a panel's steps are a
// dependent chain otherwise, and a step is shorter than the multiply-add's latency (eight
// against four: 3-11 % faster on the lstm gates and fc 300-100 at 90 %, the most in the
// machine's slow state). One template for both widths; Tr holds the vector operations:
// TilesAvx2 (8 lanes, vpermps ymm) and, on AVX-512 targets, TilesAvx512 (16 lanes, vpermps
// zmm: about half the steps of 8 lanes at 90 % sparsity, each about as cheap).
struct TilesAvx2 {
  static constexpr int kWidth = 8;
  using V = __m256;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static void Store(float* p, V v) { _mm256_store_ps(p, v); }
  // acc + v * x[lane bits of v]
  static V Step(V v, V xw, V acc) {
    return _mm256_fmadd_ps(v, _mm256_permutevar8x32_ps(xw, _mm256_castps_si256(v)), acc);
  }
};
#if HWY_TARGET <= HWY_AVX3
struct TilesAvx512 {
  static constexpr int kWidth = 16;
  using V = __m512;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static void Store(float* p, V v) { _mm512_store_ps(p, v); }
  static V Step(V v, V xw, V acc) {
    return _mm512_fmadd_ps(v, _mm512_permutexvar_ps(_mm512_castps_si512(v), xw), acc);
  }
};
#endif

template <class Tr>
HWY_NOINLINE void RowsTiles(const SparseMatrix& w, const RowsArgs& a, int64_t p0, int64_t p1) {
  constexpr int P = Tr::kWidth;
  using V = typename Tr::V;
  const float* vals = w.panel_val.data();
  const uint16_t* xo = w.tile_xoff.data();
  const int32_t* pp = w.panel_ptr.data();
  for (int64_t m = a.m0; m < a.m1; ++m) {
    const float* xr = a.x + m * a.ldx;
    float* yr = a.y + m * a.ldy;
// The weights are also the permutation (their low mantissa bits hold the lanes). The empty
// asm makes v one load: GCC would load it again for the multiply-add otherwise.
#define MINNOW_TILE_STEP_X(acc, t, xw)                   \
  do {                                                  \
    V v = Tr::Load(vals + static_cast<int64_t>(t) * P); \
    __asm__("" : "+v"(v));                              \
    acc = Tr::Step(v, xw, acc);                         \
  } while (0)
#define MINNOW_TILE_STEP(acc, t) MINNOW_TILE_STEP_X(acc, t, Tr::Load(xr + xo[t]))
    for (int64_t c0 = p0; c0 < p1; c0 += kPanelChunk) {
      const int64_t c1 = std::min(p1, c0 + kPanelChunk);
      HWY_ALIGN float buf[kPanelChunk * P];
      for (int64_t p = c0; p < c1; ++p) {
        V s0 = Tr::Zero(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
        int32_t t = pp[p];
        const int32_t pe = t + w.tile_pairs[static_cast<size_t>(p)], e = pp[p + 1];
        for (; t + 8 <= pe; t += 8) {  // four pairs: four x windows for eight steps
          const V xa = Tr::Load(xr + xo[t]), xb = Tr::Load(xr + xo[t + 2]);
          const V xc = Tr::Load(xr + xo[t + 4]), xd = Tr::Load(xr + xo[t + 6]);
          MINNOW_TILE_STEP_X(s0, t, xa);
          MINNOW_TILE_STEP_X(s1, t + 1, xa);
          MINNOW_TILE_STEP_X(s2, t + 2, xb);
          MINNOW_TILE_STEP_X(s3, t + 3, xb);
          MINNOW_TILE_STEP_X(s4, t + 4, xc);
          MINNOW_TILE_STEP_X(s5, t + 5, xc);
          MINNOW_TILE_STEP_X(s6, t + 6, xd);
          MINNOW_TILE_STEP_X(s7, t + 7, xd);
        }
        for (; t < pe; t += 2) {
          const V xa = Tr::Load(xr + xo[t]);
          MINNOW_TILE_STEP_X(s0, t, xa);
          MINNOW_TILE_STEP_X(s1, t + 1, xa);
        }
        for (; t + 2 <= e; t += 2) {
          MINNOW_TILE_STEP(s2, t);
          MINNOW_TILE_STEP(s3, t + 1);
        }
        if (t < e) MINNOW_TILE_STEP(s4, t);
        Tr::Store(buf + (p - c0) * P, Tr::Add(Tr::Add(Tr::Add(s0, s1), Tr::Add(s2, s3)),
                                              Tr::Add(Tr::Add(s4, s5), Tr::Add(s6, s7))));
      }
      FlushPanels(buf, w.panel_row.data() + c0 * P, (c1 - c0) * P, a, yr);
    }
#undef MINNOW_TILE_STEP
#undef MINNOW_TILE_STEP_X
  }
}

int TileWidthImpl() { return HWY_TARGET <= HWY_AVX3 ? 16 : 8; }
void RowsTilesAny(const SparseMatrix& w, const RowsArgs& a, int64_t p0, int64_t p1) {
#if HWY_TARGET <= HWY_AVX3
  if (w.tile_width == 16) return RowsTiles<TilesAvx512>(w, a, p0, p1);
#endif
  if (w.tile_width == 8) return RowsTiles<TilesAvx2>(w, a, p0, p1);
  rows_panels_ref(w, a, p0, p1);
}
#else
int TileWidthImpl() { return 0; }
void RowsTilesAny(const SparseMatrix& w, const RowsArgs& a, int64_t p0, int64_t p1) {
  rows_panels_ref(w, a, p0, p1);
}
#endif

void RowsImpl(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  const BlockShape s = w.shape;
  if (w.tiled) return RowsTilesAny(w, a, rb0, rb1);
  if (w.panels() > 0)
    return s.c == 1 ? RowsPanels1(w, a, rb0, rb1) : RowsPanels4(w, a, rb0, rb1);
  if (s == BlockShape{1, 1}) return Rows11(w, a, rb0, rb1);
  if (s == BlockShape{1, 4}) return Rows1<4>(w, a, rb0, rb1);
  if (s == BlockShape{1, 8}) return Rows1<8>(w, a, rb0, rb1);
  if (s == BlockShape{4, 1}) return Rows4(w, a, rb0, rb1);
  rows_ref(w, a, rb0, rb1);
}

#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace cpu_sparse
}  // namespace minnow
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace minnow {
namespace cpu_sparse {

HWY_EXPORT(SpmmImpl);
HWY_EXPORT(RowsImpl);
HWY_EXPORT(TargetNameImpl);
HWY_EXPORT(LanesImpl);
HWY_EXPORT(TileWidthImpl);

void spmm(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  HWY_DYNAMIC_DISPATCH(SpmmImpl)(w, a, rb0, rb1);
}
void rows(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  if (w.tiled && w.tile_interleave > 1 && w.tile_width <= rows_tile_width()) {
    // The tiled kernel reads x de-interleaved (SparseMatrix::tile_interleave): reordered
    // here row by row into a buffer on the stack (such matrices have at most
    // kMaxInterleavedCols columns), a few hundred floats against the row's work; no
    // allocation. Without a tiled kernel of that width (rows_tile_width() is the widest;
    // AVX-512 has 8 and 16) the reference runs, on x as it is.
    alignas(64) float xs[SparseMatrix::kMaxInterleavedCols];
    for (int64_t m = a.m0; m < a.m1; ++m) {
      deinterleave_x(a.x + m * a.ldx, w.cols, w.tile_interleave, xs);
      RowsArgs b = a;
      b.x = xs;
      b.ldx = w.cols;
      b.m0 = 0;
      b.m1 = 1;
      b.y = a.y + m * a.ldy;
      HWY_DYNAMIC_DISPATCH(RowsImpl)(w, b, rb0, rb1);
    }
    return;
  }
  HWY_DYNAMIC_DISPATCH(RowsImpl)(w, a, rb0, rb1);
}
const char* simd_target_name() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }
int64_t spmm_lanes() { return HWY_DYNAMIC_DISPATCH(LanesImpl)(); }
int rows_tile_width() { return HWY_DYNAMIC_DISPATCH(TileWidthImpl)(); }

}  // namespace cpu_sparse
}  // namespace minnow
#endif
