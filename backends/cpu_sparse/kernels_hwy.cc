// SIMD kernels (Highway, compiled once per target by foreach_target.h and dispatched at
// run time). Written without arrays of vectors or vectors in structs/lambdas, so the
// sizeless SVE types compile too; every accumulator is a named variable.
//
// Tails: columns left over after whole vectors are done in scalar code, never with a
// masked load, because Highway 1.0.3 emulates MaskedLoad on NEON/SSE4 with a full-width
// load that could read past the end of the last row of x.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels.h"

#include <algorithm>

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_sparse {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

#if HWY_TARGET == HWY_SCALAR
// One lane: the reference loops are as good as anything written here.
void SpmmImpl(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  spmm_ref(w, a, rb0, rb1);
}
void RowsImpl(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  rows_ref(w, a, rb0, rb1);
}
#else

// y = acc (+ beta * y), full vector.
template <class D, class V>
HWY_INLINE void StoreOut(D d, V acc, float beta, float* p) {
  if (beta != 0.0f) acc = hn::MulAdd(hn::Set(d, beta), hn::LoadU(d, p), acc);
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
    yr[j] = a.beta != 0.0f ? acc + a.beta * yr[j] : acc;
  }
}

// 1xC blocks (CSR when C == 1): per output row, a strip of 4 vectors of columns stays in
// registers while the row's blocks stream by; each block is C broadcasts x C*4 FMAs.
template <int C>
HWY_NOINLINE void Spmm1(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float* vals = w.values.data();
  const int32_t* col = w.col.data();
  const int32_t* rp = w.row_ptr.data();
  const int64_t J = a.J, ldx = a.ldx;
  int64_t j = 0;
  for (; j + 4 * L <= J; j += 4 * L) {
    for (int64_t n = rb0; n < rb1; ++n) {
      const auto bv = hn::Set(d, a.bias ? a.bias[n] : 0.0f);
      auto a0 = bv, a1 = bv, a2 = bv, a3 = bv;
      for (int32_t b = rp[n]; b < rp[n + 1]; ++b) {
        const float* wb = vals + static_cast<int64_t>(b) * C;
        const float* xb = a.x + static_cast<int64_t>(col[b]) * ldx + j;
        for (int c = 0; c < C; ++c) {
          const auto wv = hn::Set(d, wb[c]);
          const float* xr = xb + c * ldx;
          a0 = hn::MulAdd(wv, hn::LoadU(d, xr), a0);
          a1 = hn::MulAdd(wv, hn::LoadU(d, xr + L), a1);
          a2 = hn::MulAdd(wv, hn::LoadU(d, xr + 2 * L), a2);
          a3 = hn::MulAdd(wv, hn::LoadU(d, xr + 3 * L), a3);
        }
      }
      float* yr = a.y + n * a.ldy + j;
      StoreOut(d, a0, a.beta, yr);
      StoreOut(d, a1, a.beta, yr + L);
      StoreOut(d, a2, a.beta, yr + 2 * L);
      StoreOut(d, a3, a.beta, yr + 3 * L);
    }
  }
  for (; j + L <= J; j += L) {
    for (int64_t n = rb0; n < rb1; ++n) {
      auto a0 = hn::Set(d, a.bias ? a.bias[n] : 0.0f);
      for (int32_t b = rp[n]; b < rp[n + 1]; ++b) {
        const float* wb = vals + static_cast<int64_t>(b) * C;
        const float* xb = a.x + static_cast<int64_t>(col[b]) * ldx + j;
        for (int c = 0; c < C; ++c) a0 = hn::MulAdd(hn::Set(d, wb[c]), hn::LoadU(d, xb + c * ldx), a0);
      }
      StoreOut(d, a0, a.beta, a.y + n * a.ldy + j);
    }
  }
  if (j < J)
    for (int64_t n = rb0; n < rb1; ++n) spmm_tail(w, a, n, 0, j);
}

// 4x1 blocks: one load of x feeds four output rows (8 accumulators over 2 vectors).
HWY_NOINLINE void Spmm4(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float* vals = w.values.data();
  const int32_t* col = w.col.data();
  const int32_t* rp = w.row_ptr.data();
  const int64_t J = a.J, ldx = a.ldx;
  for (int64_t br = rb0; br < rb1; ++br) {
    const int64_t n0 = br * 4;
    const int valid = static_cast<int>(std::min<int64_t>(4, w.rows - n0));
    float bias[4] = {0, 0, 0, 0};
    for (int r = 0; r < valid; ++r) bias[r] = a.bias ? a.bias[n0 + r] : 0.0f;
    int64_t j = 0;
    for (; j + 2 * L <= J; j += 2 * L) {
      auto c00 = hn::Set(d, bias[0]), c10 = hn::Set(d, bias[1]);
      auto c20 = hn::Set(d, bias[2]), c30 = hn::Set(d, bias[3]);
      auto c01 = c00, c11 = c10, c21 = c20, c31 = c30;
      for (int32_t b = rp[br]; b < rp[br + 1]; ++b) {
        const float* wb = vals + static_cast<int64_t>(b) * 4;
        const float* xr = a.x + static_cast<int64_t>(col[b]) * ldx + j;
        const auto x0 = hn::LoadU(d, xr), x1 = hn::LoadU(d, xr + L);
        const auto w0 = hn::Set(d, wb[0]), w1 = hn::Set(d, wb[1]);
        const auto w2 = hn::Set(d, wb[2]), w3 = hn::Set(d, wb[3]);
        c00 = hn::MulAdd(w0, x0, c00);
        c01 = hn::MulAdd(w0, x1, c01);
        c10 = hn::MulAdd(w1, x0, c10);
        c11 = hn::MulAdd(w1, x1, c11);
        c20 = hn::MulAdd(w2, x0, c20);
        c21 = hn::MulAdd(w2, x1, c21);
        c30 = hn::MulAdd(w3, x0, c30);
        c31 = hn::MulAdd(w3, x1, c31);
      }
      float* y0 = a.y + n0 * a.ldy + j;
      StoreOut(d, c00, a.beta, y0);
      StoreOut(d, c01, a.beta, y0 + L);
      if (valid > 1) {
        StoreOut(d, c10, a.beta, y0 + a.ldy);
        StoreOut(d, c11, a.beta, y0 + a.ldy + L);
      }
      if (valid > 2) {
        StoreOut(d, c20, a.beta, y0 + 2 * a.ldy);
        StoreOut(d, c21, a.beta, y0 + 2 * a.ldy + L);
      }
      if (valid > 3) {
        StoreOut(d, c30, a.beta, y0 + 3 * a.ldy);
        StoreOut(d, c31, a.beta, y0 + 3 * a.ldy + L);
      }
    }
    for (; j + L <= J; j += L) {
      auto c0 = hn::Set(d, bias[0]), c1 = hn::Set(d, bias[1]);
      auto c2 = hn::Set(d, bias[2]), c3 = hn::Set(d, bias[3]);
      for (int32_t b = rp[br]; b < rp[br + 1]; ++b) {
        const float* wb = vals + static_cast<int64_t>(b) * 4;
        const auto x0 = hn::LoadU(d, a.x + static_cast<int64_t>(col[b]) * ldx + j);
        c0 = hn::MulAdd(hn::Set(d, wb[0]), x0, c0);
        c1 = hn::MulAdd(hn::Set(d, wb[1]), x0, c1);
        c2 = hn::MulAdd(hn::Set(d, wb[2]), x0, c2);
        c3 = hn::MulAdd(hn::Set(d, wb[3]), x0, c3);
      }
      float* y0 = a.y + n0 * a.ldy + j;
      StoreOut(d, c0, a.beta, y0);
      if (valid > 1) StoreOut(d, c1, a.beta, y0 + a.ldy);
      if (valid > 2) StoreOut(d, c2, a.beta, y0 + 2 * a.ldy);
      if (valid > 3) StoreOut(d, c3, a.beta, y0 + 3 * a.ldy);
    }
    if (j < J)
      for (int r = 0; r < valid; ++r) spmm_tail(w, a, br, r, j);
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
  return a.beta != 0.0f ? acc + a.beta * yr[n] : acc;
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

void RowsImpl(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  const BlockShape s = w.shape;
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

void spmm(const SparseMatrix& w, const SpmmArgs& a, int64_t rb0, int64_t rb1) {
  HWY_DYNAMIC_DISPATCH(SpmmImpl)(w, a, rb0, rb1);
}
void rows(const SparseMatrix& w, const RowsArgs& a, int64_t rb0, int64_t rb1) {
  HWY_DYNAMIC_DISPATCH(RowsImpl)(w, a, rb0, rb1);
}
const char* simd_target_name() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }

}  // namespace cpu_sparse
}  // namespace minnow
#endif
