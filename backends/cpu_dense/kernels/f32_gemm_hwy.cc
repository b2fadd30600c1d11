// f32_gemm_6x2v: the SIMD micro-kernel of kernels/gemm.h, compiled once per Highway target
// (foreach_target.h) and chosen at run time. Written without arrays of vectors or vectors
// in structs, so the sizeless SVE types compile: every accumulator is a named variable.
//
// Per k: two B vectors are loaded, six A values broadcast, twelve FMAs issued. Full tiles
// store straight to C; partial tiles (nr < NR) go through a stack tile and a scalar
// epilogue, so nothing is written outside C and no masked load is needed.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/f32_gemm_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/gemm.h"

#include <algorithm>

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_dense {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

int NrImpl() { return 2 * static_cast<int>(hn::Lanes(hn::ScalableTag<float>())); }
const char* TargetImpl() { return hwy::TargetName(HWY_TARGET); }

// Finishes one row of a full tile of NV (1 or 2) vectors: bias, beta * old, addend,
// clamp, store.
template <int NV, class D, class V>
HWY_INLINE void FinishRow(D d, V v0, V v1, int64_t i, const Tile& t, const Epilogue& e,
                          V lo, V hi) {
  const size_t L = hn::Lanes(d);
  float* c = t.c + i * t.ldc;
  if (e.bias) {
    if (e.bias_per_row) {
      const V bv = hn::Set(d, e.bias[i]);
      v0 = hn::Add(v0, bv);
      if (NV > 1) v1 = hn::Add(v1, bv);
    } else {
      v0 = hn::Add(v0, hn::LoadU(d, e.bias));
      if (NV > 1) v1 = hn::Add(v1, hn::LoadU(d, e.bias + L));
    }
  }
  if (e.beta != 0.0f) {
    const V be = hn::Set(d, e.beta);
    v0 = hn::MulAdd(be, hn::LoadU(d, c), v0);
    if (NV > 1) v1 = hn::MulAdd(be, hn::LoadU(d, c + L), v1);
  }
  if (e.addend) {
    const float* r = e.addend + i * t.ldc;
    v0 = hn::Add(v0, hn::LoadU(d, r));
    if (NV > 1) v1 = hn::Add(v1, hn::LoadU(d, r + L));
  }
  hn::StoreU(hn::Min(hn::Max(v0, lo), hi), d, c);
  if (NV > 1) hn::StoreU(hn::Min(hn::Max(v1, lo), hi), d, c + L);
}

// Partial tile row: masked vectors on x86, else the accumulators to the stack and the
// epilogue per element. Not inlined: only tiles at a matrix's edge take it, and inlined
// into every row of every tile variant on every target it was ~40 % of the micro-kernels'
// code.
template <class D, class V>
HWY_NOINLINE void FinishRowPartial(D d, V v0, V v1, int64_t i, const Tile& t,
                                 const Epilogue& e) {
  const size_t L = hn::Lanes(d);
  float* c = t.c + i * t.ldc;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // Masked loads and stores (vmaskmov, AVX-512 masks: lanes past nr are neither read nor
  // written), the epilogue of FinishRow. Element by element, the 9-column tails of 13x13
  // maps took ~1 % of squeezenet1_1's time: Zen 5, one layer, hot caches, its 13x13 1x1
  // expands 48 -> 192 and 64 -> 256 0.91x and 0.94x the time, the classifier 0.99x.
  for (size_t h = 0; h < 2 && h * L < size_t(t.nr); ++h) {
    const auto mk = hn::FirstN(d, std::min(L, size_t(t.nr) - h * L));
    V v = h == 0 ? v0 : v1;
    float* ch = c + h * L;
    if (e.bias) v = hn::Add(v, e.bias_per_row ? hn::Set(d, e.bias[i]) : hn::MaskedLoad(mk, d, e.bias + h * L));
    if (e.beta != 0.0f) v = hn::MulAdd(hn::Set(d, e.beta), hn::MaskedLoad(mk, d, ch), v);
    if (e.addend) v = hn::Add(v, hn::MaskedLoad(mk, d, e.addend + i * t.ldc + h * L));
    hn::BlendedStore(hn::Min(hn::Max(v, hn::Set(d, e.lo)), hn::Set(d, e.hi)), mk, d, ch);
  }
#else
  HWY_ALIGN float tmp[2 * (HWY_MAX_BYTES / sizeof(float))] = {};
  hn::Store(v0, d, tmp);
  hn::Store(v1, d, tmp + L);
  for (int j = 0; j < t.nr; ++j) {
    float v = tmp[j];
    if (e.bias) v += e.bias_per_row ? e.bias[i] : e.bias[j];
    if (e.beta != 0.0f) v += e.beta * c[j];
    if (e.addend) v += e.addend[i * t.ldc + j];
    c[j] = std::min(std::max(v, e.lo), e.hi);
  }
#endif
}

// Row i of a tile of NV vectors: whole (`full`: nr == NV lanes) or partial.
template <int NV, class D, class V>
HWY_INLINE void FinishTileRow(D d, V v0, V v1, int64_t i, const Tile& t, const Epilogue& e,
                              bool full, V lo, V hi) {
  if (full)
    FinishRow<NV>(d, v0, v1, i, t, e, lo, hi);
  else
    FinishRowPartial(d, v0, v1, i, t, e);
}

// One row (a matrix-vector product: batch-1 Gemm, LSTM steps): the 6-row kernel would
// leave two dependent FMA chains; here k is unrolled by 4 into 8 independent chains.
HWY_NOINLINE void RowImpl(const Tile& t, const Epilogue& e) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  V p0 = hn::Zero(d), p1 = hn::Zero(d), q0 = hn::Zero(d), q1 = hn::Zero(d);
  V r0 = hn::Zero(d), r1 = hn::Zero(d), s0 = hn::Zero(d), s1 = hn::Zero(d);
  const float* a = t.a;
  const float* b = t.b;
  const int64_t ldb = t.ldb, acs = t.a_cs;
  int64_t k = 0;
  for (; k + 4 <= t.K; k += 4) {
    const float* bk = b + k * ldb;
    V av = hn::Set(d, a[k * acs]);
    p0 = hn::MulAdd(av, hn::LoadU(d, bk), p0);
    p1 = hn::MulAdd(av, hn::LoadU(d, bk + L), p1);
    av = hn::Set(d, a[(k + 1) * acs]);
    q0 = hn::MulAdd(av, hn::LoadU(d, bk + ldb), q0);
    q1 = hn::MulAdd(av, hn::LoadU(d, bk + ldb + L), q1);
    av = hn::Set(d, a[(k + 2) * acs]);
    r0 = hn::MulAdd(av, hn::LoadU(d, bk + 2 * ldb), r0);
    r1 = hn::MulAdd(av, hn::LoadU(d, bk + 2 * ldb + L), r1);
    av = hn::Set(d, a[(k + 3) * acs]);
    s0 = hn::MulAdd(av, hn::LoadU(d, bk + 3 * ldb), s0);
    s1 = hn::MulAdd(av, hn::LoadU(d, bk + 3 * ldb + L), s1);
  }
  for (; k < t.K; ++k) {
    const V av = hn::Set(d, a[k * acs]);
    p0 = hn::MulAdd(av, hn::LoadU(d, b + k * ldb), p0);
    p1 = hn::MulAdd(av, hn::LoadU(d, b + k * ldb + L), p1);
  }
  const V c0 = hn::Add(hn::Add(p0, q0), hn::Add(r0, s0));
  const V c1 = hn::Add(hn::Add(p1, q1), hn::Add(r1, s1));
  FinishTileRow<2>(d, c0, c1, 0, t, e, t.nr == 2 * L, hn::Set(d, e.lo), hn::Set(d, e.hi));
}

// Row i of a tile's A; rows beyond mr read row 0 again (always valid) and are never stored.
HWY_INLINE const float* TileRow(const Tile& t, int i) { return t.a + (t.mr > i ? i : 0) * t.a_rs; }

// One row's FMAs for one k: A's value a (broadcast) times the NV vectors of B's row.
// (References, not arrays: SVE's sizeless vector types can be neither array elements nor
// struct members.)
template <int NV, class D, class V>
HWY_INLINE void RowFma(D d, float a, V b0, V b1, V& c0, V& c1) {
  const V av = hn::Set(d, a);
  c0 = hn::MulAdd(av, b0, c0);
  if (NV > 1) c1 = hn::MulAdd(av, b1, c1);
}

// A tile of NV (1 or 2) vectors of columns with the FMAs of its first R (2, 4, 6) rows
// only. One vector: tails of at most NR / 2 columns (with 32-wide panels 13x13 maps leave
// 9 columns, 7x7 maps 17 = 16 + a dot column, plan_conv), which a two-vector tile computed
// as a whole NR (Zen 4, AVX-512, one layer, 21 alternating runs: squeezenet1_1's
// classifier, 512 -> 1000 at 13x13, 0.90x the time, 384 -> 64 at 13x13 0.93x). Fewer rows:
// a last row panel of 2 or 4 rows (M = 16, 32, 64, 1000 ...) does not compute six.
// IND: B's row k at t.b + b_off[k] (gemm_tile_indirect_fn), else t.b + k * t.ldb.
template <int R, int NV, bool IND = false, bool PF = false>
HWY_INLINE void TileRowsImpl(const Tile& t, const Epilogue& e, const int32_t* b_off = nullptr) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float *a0 = t.a, *a1 = TileRow(t, 1), *a2 = TileRow(t, 2);
  const float *a3 = TileRow(t, 3), *a4 = TileRow(t, 4), *a5 = TileRow(t, 5);
  V c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  V c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  V c40 = hn::Zero(d), c41 = hn::Zero(d), c50 = hn::Zero(d), c51 = hn::Zero(d);
  const float* b = t.b;
  const int64_t ldb = t.ldb, acs = t.a_cs;
  // Unrolled by 4: on Zen 3 (AVX2) the tile ran at ~0.83x of the same loop written with
  // intrinsics and unrolled (L1-resident A and B, K = 192: 70-77 against 90-95 GFLOP/s);
  // unrolled, 0.97-1.0x. Whole layers bound by the FMAs (576 -> 96 at 14x14, 3x3 256 at
  // 14x14, 3x3 512 at 7x7; 31 alternating runs) came out 4-6 % faster, about the noise
  // two identical builds showed on that host.
  // PF: the next row panel's lines, one per row every 16 k (a line of a row read in
  // place): issued all at once before the tile (up to 96 lines), they filled the core's
  // miss buffers and the prefetches themselves stalled (resnet50 on the Xeon: 4-5 % of the
  // run's cycles on them). Without, the outer loop runs once over all of K.
  const int64_t chunk = PF ? 16 : t.K;
  for (int64_t k0 = 0; k0 < t.K; k0 += chunk) {
    if (PF)
      for (int r = 0; r < t.pf_rows; ++r) __builtin_prefetch(t.pf + r * t.a_rs + k0, 0, 2);
    const int64_t k1 = PF ? std::min<int64_t>(t.K, k0 + chunk) : t.K;
#pragma GCC unroll 4
    for (int64_t k = k0; k < k1; ++k) {
      const float* bk = IND ? t.b + b_off[k] : b;
      const V b0 = hn::LoadU(d, bk);
      const V b1 = NV > 1 ? hn::LoadU(d, bk + L) : b0;  // one vector: B holds only NR / 2 here
      if (!IND) b += ldb;
      const int64_t o = k * acs;
      RowFma<NV>(d, a0[o], b0, b1, c00, c01);
      RowFma<NV>(d, a1[o], b0, b1, c10, c11);
      if (R > 2) {
        RowFma<NV>(d, a2[o], b0, b1, c20, c21);
        RowFma<NV>(d, a3[o], b0, b1, c30, c31);
      }
      if (R > 4) {
        RowFma<NV>(d, a4[o], b0, b1, c40, c41);
        RowFma<NV>(d, a5[o], b0, b1, c50, c51);
      }
    }
  }
  const bool full = t.nr == NV * L;
  const V lo = hn::Set(d, e.lo), hi = hn::Set(d, e.hi);
  const int mr = t.mr;
  FinishTileRow<NV>(d, c00, c01, 0, t, e, full, lo, hi);
  if (mr > 1) FinishTileRow<NV>(d, c10, c11, 1, t, e, full, lo, hi);
  if (mr > 2) FinishTileRow<NV>(d, c20, c21, 2, t, e, full, lo, hi);
  if (mr > 3) FinishTileRow<NV>(d, c30, c31, 3, t, e, full, lo, hi);
  if (mr > 4) FinishTileRow<NV>(d, c40, c41, 4, t, e, full, lo, hi);
  if (mr > 5) FinishTileRow<NV>(d, c50, c51, 5, t, e, full, lo, hi);
}

// Six rows' FMAs for one k against one vector of B: A's rows p[0], p[ars], ... p[5 ars].
template <class D, class V>
HWY_INLINE void SixRowsFma(D d, const float* p, int64_t ars, V bv, V& c0, V& c1, V& c2, V& c3, V& c4,
                           V& c5) {
  c0 = hn::MulAdd(hn::Set(d, p[0]), bv, c0);
  c1 = hn::MulAdd(hn::Set(d, p[ars]), bv, c1);
  c2 = hn::MulAdd(hn::Set(d, p[2 * ars]), bv, c2);
  c3 = hn::MulAdd(hn::Set(d, p[3 * ars]), bv, c3);
  c4 = hn::MulAdd(hn::Set(d, p[4 * ars]), bv, c4);
  c5 = hn::MulAdd(hn::Set(d, p[5 * ars]), bv, c5);
}

// Rows i0 .. i0 + 5 of a one-vector tile, all of them valid.
template <class D, class V>
HWY_INLINE void FinishSixRows(D d, V c0, V c1, V c2, V c3, V c4, V c5, int64_t i0, const Tile& t,
                              const Epilogue& e, bool full, V lo, V hi) {
  FinishTileRow<1>(d, c0, c0, i0, t, e, full, lo, hi);
  FinishTileRow<1>(d, c1, c1, i0 + 1, t, e, full, lo, hi);
  FinishTileRow<1>(d, c2, c2, i0 + 2, t, e, full, lo, hi);
  FinishTileRow<1>(d, c3, c3, i0 + 3, t, e, full, lo, hi);
  FinishTileRow<1>(d, c4, c4, i0 + 4, t, e, full, lo, hi);
  FinishTileRow<1>(d, c5, c5, i0 + 5, t, e, full, lo, hi);
}

// Two row panels (12 rows, all of them valid) x one vector: a half panel's columns, whose
// six-row tile keeps only six FMA chains in flight (two FMA pipes of 4 cycles' latency
// want eight); here twelve, each A value broadcast once per k as there. Rows 0-5 from
// a0, 6-11 from a6, both `ars` apart, so the addresses take few registers.
HWY_NOINLINE void Tile12x1Impl(const Tile& t, const Epilogue& e) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  V c0 = hn::Zero(d), c1 = hn::Zero(d), c2 = hn::Zero(d), c3 = hn::Zero(d);
  V c4 = hn::Zero(d), c5 = hn::Zero(d), c6 = hn::Zero(d), c7 = hn::Zero(d);
  V c8 = hn::Zero(d), c9 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  const int64_t ars = t.a_rs, acs = t.a_cs, ldb = t.ldb;
  const float* a0 = t.a;
  const float* a6 = t.a + 6 * ars;
  const float* b = t.b;
#pragma GCC unroll 2
  for (int64_t k = 0; k < t.K; ++k, b += ldb) {
    const V bv = hn::LoadU(d, b);
    SixRowsFma(d, a0 + k * acs, ars, bv, c0, c1, c2, c3, c4, c5);
    SixRowsFma(d, a6 + k * acs, ars, bv, c6, c7, c8, c9, c10, c11);
  }
  const bool full = t.nr == static_cast<int>(hn::Lanes(d));
  const V lo = hn::Set(d, e.lo), hi = hn::Set(d, e.hi);
  FinishSixRows(d, c0, c1, c2, c3, c4, c5, 0, t, e, full, lo, hi);
  FinishSixRows(d, c6, c7, c8, c9, c10, c11, 6, t, e, full, lo, hi);
}

// The full 6-row two-vector tile with the next row panel's prefetches (Tile::pf), apart
// from TileImpl so that its variants' code stays as it was.
HWY_NOINLINE void TilePrefetchImpl(const Tile& t, const Epilogue& e) { TileRowsImpl<6, 2, false, true>(t, e); }

void TileImpl(const Tile& t, const Epilogue& e) {
  if (t.mr == 1) return RowImpl(t, e);
  if (t.nr <= static_cast<int>(hn::Lanes(hn::ScalableTag<float>())))
    return t.mr > kGemmMR ? Tile12x1Impl(t, e) : TileRowsImpl<6, 1>(t, e);
  if (t.mr <= 2) return TileRowsImpl<2, 2>(t, e);
  if (t.mr <= 4) return TileRowsImpl<4, 2>(t, e);
  if (t.pf) return TilePrefetchImpl(t, e);
  TileRowsImpl<6, 2>(t, e);
}

// Six rows always (a last panel of fewer reads row 0 again and stores only its own): the
// direct convolutions' few tiles with short row panels do not pay for two more variants.
void TileIndirectImpl(const Tile& t, const int32_t* b_off, const Epilogue& e) {
  if (t.nr <= static_cast<int>(hn::Lanes(hn::ScalableTag<float>()))) return TileRowsImpl<6, 1, true>(t, e, b_off);
  TileRowsImpl<6, 2, true>(t, e, b_off);
}

// Tall tile (gemm.h): 16 rows x one vector, A k-major, each A value an embedded-broadcast
// FMA operand; 16 accumulators + B in AVX-512's 32 registers.
bool TallAvailableImpl() { return HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL; }
void TallImpl(const Tile& t, const Epilogue& e) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  V c0 = hn::Zero(d), c1 = hn::Zero(d), c2 = hn::Zero(d), c3 = hn::Zero(d);
  V c4 = hn::Zero(d), c5 = hn::Zero(d), c6 = hn::Zero(d), c7 = hn::Zero(d);
  V c8 = hn::Zero(d), c9 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  V c12 = hn::Zero(d), c13 = hn::Zero(d), c14 = hn::Zero(d), c15 = hn::Zero(d);
  const float* a = t.a;
  const float* b = t.b;
  const int64_t ldb = t.ldb;
#pragma GCC unroll 2
  for (int64_t k = 0; k < t.K; ++k, a += kGemmTallRows, b += ldb) {
    const V bv = hn::LoadU(d, b);
    c0 = hn::MulAdd(hn::Set(d, a[0]), bv, c0);
    c1 = hn::MulAdd(hn::Set(d, a[1]), bv, c1);
    c2 = hn::MulAdd(hn::Set(d, a[2]), bv, c2);
    c3 = hn::MulAdd(hn::Set(d, a[3]), bv, c3);
    c4 = hn::MulAdd(hn::Set(d, a[4]), bv, c4);
    c5 = hn::MulAdd(hn::Set(d, a[5]), bv, c5);
    c6 = hn::MulAdd(hn::Set(d, a[6]), bv, c6);
    c7 = hn::MulAdd(hn::Set(d, a[7]), bv, c7);
    c8 = hn::MulAdd(hn::Set(d, a[8]), bv, c8);
    c9 = hn::MulAdd(hn::Set(d, a[9]), bv, c9);
    c10 = hn::MulAdd(hn::Set(d, a[10]), bv, c10);
    c11 = hn::MulAdd(hn::Set(d, a[11]), bv, c11);
    c12 = hn::MulAdd(hn::Set(d, a[12]), bv, c12);
    c13 = hn::MulAdd(hn::Set(d, a[13]), bv, c13);
    c14 = hn::MulAdd(hn::Set(d, a[14]), bv, c14);
    c15 = hn::MulAdd(hn::Set(d, a[15]), bv, c15);
  }
  const bool full = t.nr == static_cast<int>(hn::Lanes(d));
  const V lo = hn::Set(d, e.lo), hi = hn::Set(d, e.hi);
  FinishTileRow<1>(d, c0, c0, 0, t, e, full, lo, hi);
  if (t.mr > 1) FinishTileRow<1>(d, c1, c1, 1, t, e, full, lo, hi);
  if (t.mr > 2) FinishTileRow<1>(d, c2, c2, 2, t, e, full, lo, hi);
  if (t.mr > 3) FinishTileRow<1>(d, c3, c3, 3, t, e, full, lo, hi);
  if (t.mr > 4) FinishTileRow<1>(d, c4, c4, 4, t, e, full, lo, hi);
  if (t.mr > 5) FinishTileRow<1>(d, c5, c5, 5, t, e, full, lo, hi);
  if (t.mr > 6) FinishTileRow<1>(d, c6, c6, 6, t, e, full, lo, hi);
  if (t.mr > 7) FinishTileRow<1>(d, c7, c7, 7, t, e, full, lo, hi);
  if (t.mr > 8) FinishTileRow<1>(d, c8, c8, 8, t, e, full, lo, hi);
  if (t.mr > 9) FinishTileRow<1>(d, c9, c9, 9, t, e, full, lo, hi);
  if (t.mr > 10) FinishTileRow<1>(d, c10, c10, 10, t, e, full, lo, hi);
  if (t.mr > 11) FinishTileRow<1>(d, c11, c11, 11, t, e, full, lo, hi);
  if (t.mr > 12) FinishTileRow<1>(d, c12, c12, 12, t, e, full, lo, hi);
  if (t.mr > 13) FinishTileRow<1>(d, c13, c13, 13, t, e, full, lo, hi);
  if (t.mr > 14) FinishTileRow<1>(d, c14, c14, 14, t, e, full, lo, hi);
  if (t.mr > 15) FinishTileRow<1>(d, c15, c15, 15, t, e, full, lo, hi);
#else
  (void)t, (void)e;
#endif
}

// Dot tiles (gemm.h, DotTile): 8 rows x 1 column or 4 rows x 2 columns, k along the
// lanes, eight accumulators (enough independent FMA chains), one reduction per output.
template <class D, class V>
HWY_INLINE void FinishDot(D d, V acc, const float* a, const float* bt, int64_t k0, int64_t K,
                          int64_t i, int64_t j, const DotTile& t, const Epilogue& e) {
  float v = hn::GetLane(hn::SumOfLanes(d, acc));
  for (int64_t k = k0; k < K; ++k) v += a[k] * bt[k];  // the K % lanes tail
  if (e.bias) v += e.bias[i];
  float* c = t.c + i * t.ldc + j;
  if (e.beta != 0.0f) v += e.beta * *c;
  if (e.addend) v += e.addend[i * t.ldc + j];
  *c = std::min(std::max(v, e.lo), e.hi);
}

void DotImpl(const DotTile& t, const Epilogue& e) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t K = t.K, Kv = K - K % L;
  const int rows = t.rows;
  // Rows beyond `rows` read row 0 again (always valid) and are never stored.
  auto row = [&](int i) { return t.a + (i < rows ? i : 0) * t.a_rs; };
  V s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  V s4 = hn::Zero(d), s5 = hn::Zero(d), s6 = hn::Zero(d), s7 = hn::Zero(d);
  if (t.cols == 1) {
    const float *a0 = row(0), *a1 = row(1), *a2 = row(2), *a3 = row(3);
    const float *a4 = row(4), *a5 = row(5), *a6 = row(6), *a7 = row(7);
    const float* b = t.bt;
    for (int64_t k = 0; k < Kv; k += L) {
      const V bv = hn::LoadU(d, b + k);
      s0 = hn::MulAdd(hn::LoadU(d, a0 + k), bv, s0);
      s1 = hn::MulAdd(hn::LoadU(d, a1 + k), bv, s1);
      s2 = hn::MulAdd(hn::LoadU(d, a2 + k), bv, s2);
      s3 = hn::MulAdd(hn::LoadU(d, a3 + k), bv, s3);
      s4 = hn::MulAdd(hn::LoadU(d, a4 + k), bv, s4);
      s5 = hn::MulAdd(hn::LoadU(d, a5 + k), bv, s5);
      s6 = hn::MulAdd(hn::LoadU(d, a6 + k), bv, s6);
      s7 = hn::MulAdd(hn::LoadU(d, a7 + k), bv, s7);
    }
    FinishDot(d, s0, a0, b, Kv, K, 0, 0, t, e);
    if (rows > 1) FinishDot(d, s1, a1, b, Kv, K, 1, 0, t, e);
    if (rows > 2) FinishDot(d, s2, a2, b, Kv, K, 2, 0, t, e);
    if (rows > 3) FinishDot(d, s3, a3, b, Kv, K, 3, 0, t, e);
    if (rows > 4) FinishDot(d, s4, a4, b, Kv, K, 4, 0, t, e);
    if (rows > 5) FinishDot(d, s5, a5, b, Kv, K, 5, 0, t, e);
    if (rows > 6) FinishDot(d, s6, a6, b, Kv, K, 6, 0, t, e);
    if (rows > 7) FinishDot(d, s7, a7, b, Kv, K, 7, 0, t, e);
    return;
  }
  const float *a0 = row(0), *a1 = row(1), *a2 = row(2), *a3 = row(3);
  const float *b0 = t.bt, *b1 = t.bt + t.ldbt;
  for (int64_t k = 0; k < Kv; k += L) {
    const V u0 = hn::LoadU(d, b0 + k), u1 = hn::LoadU(d, b1 + k);
    V av = hn::LoadU(d, a0 + k);
    s0 = hn::MulAdd(av, u0, s0);
    s1 = hn::MulAdd(av, u1, s1);
    av = hn::LoadU(d, a1 + k);
    s2 = hn::MulAdd(av, u0, s2);
    s3 = hn::MulAdd(av, u1, s3);
    av = hn::LoadU(d, a2 + k);
    s4 = hn::MulAdd(av, u0, s4);
    s5 = hn::MulAdd(av, u1, s5);
    av = hn::LoadU(d, a3 + k);
    s6 = hn::MulAdd(av, u0, s6);
    s7 = hn::MulAdd(av, u1, s7);
  }
  FinishDot(d, s0, a0, b0, Kv, K, 0, 0, t, e);
  FinishDot(d, s1, a0, b1, Kv, K, 0, 1, t, e);
  if (rows > 1) FinishDot(d, s2, a1, b0, Kv, K, 1, 0, t, e);
  if (rows > 1) FinishDot(d, s3, a1, b1, Kv, K, 1, 1, t, e);
  if (rows > 2) FinishDot(d, s4, a2, b0, Kv, K, 2, 0, t, e);
  if (rows > 2) FinishDot(d, s5, a2, b1, Kv, K, 2, 1, t, e);
  if (rows > 3) FinishDot(d, s6, a3, b0, Kv, K, 3, 0, t, e);
  if (rows > 3) FinishDot(d, s7, a3, b1, Kv, K, 3, 1, t, e);
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

HWY_EXPORT(NrImpl);
HWY_EXPORT(TargetImpl);
HWY_EXPORT(TileImpl);
HWY_EXPORT(DotImpl);
HWY_EXPORT(TallAvailableImpl);
HWY_EXPORT(TallImpl);
HWY_EXPORT(TileIndirectImpl);

int gemm_nr() { return HWY_DYNAMIC_DISPATCH(NrImpl)(); }
const char* simd_target_name() { return HWY_DYNAMIC_DISPATCH(TargetImpl)(); }
TileFn gemm_tile_fn() { return &HWY_DYNAMIC_DISPATCH(TileImpl); }
void gemm_dot_tile(const DotTile& t, const Epilogue& e) { HWY_DYNAMIC_DISPATCH(DotImpl)(t, e); }
bool gemm_tall_available() { return HWY_DYNAMIC_DISPATCH(TallAvailableImpl)(); }
TileFn gemm_tall_tile_fn() { return &HWY_DYNAMIC_DISPATCH(TallImpl); }
TileIndirectFn gemm_tile_indirect_fn() { return &HWY_DYNAMIC_DISPATCH(TileIndirectImpl); }

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
#endif
