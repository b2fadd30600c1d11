// Numpy-style broadcasting, written once and used by every element-wise op with more than
// one input (Add ... Pow, Max/Min/Sum, comparisons, PRelu), by MatMul's batch dims and by
// Transpose (which is a strided copy).
//
// The output is always dense row-major. Each operand is described by element strides over
// the output's dims (0 where the operand is broadcast). StridedLoop merges adjacent dims
// that are contiguous for every operand and drops size-1 dims, so the common cases (same
// shape, scalar, per-channel bias) become one or two long inner runs, and then walks any
// range [begin, end) of output elements — the unit parallel_for hands out — as runs along
// the innermost merged dim.
#pragma once

#include "common.h"

namespace minnow {
namespace cpu_dense {

// Right-aligned broadcast of a and b into *out; false if some dim pair is neither equal
// nor 1.
inline bool broadcast_dims(const Dims& a, const Dims& b, Dims* out) {
  Dims o;
  o.rank = std::max(a.rank, b.rank);
  for (int i = 0; i < o.rank; ++i) {
    int ia = a.rank - o.rank + i, ib = b.rank - o.rank + i;
    int64_t da = ia >= 0 ? a.d[ia] : 1, db = ib >= 0 ? b.d[ib] : 1;
    if (da == db || db == 1)
      o.d[i] = da;
    else if (da == 1)
      o.d[i] = db;
    else
      return false;
  }
  *out = o;
  return true;
}

// Does `in` broadcast to exactly `out` (unidirectional, right-aligned)?
inline bool broadcasts_to(const Dims& in, const Dims& out) {
  if (in.rank > out.rank) return false;
  for (int i = 0; i < in.rank; ++i) {
    int64_t di = in.d[i], dout = out.d[out.rank - in.rank + i];
    if (di != dout && di != 1) return false;
  }
  return true;
}

// Element strides of a dense row-major `in`, viewed with the dims of `out` (right-aligned;
// `in` must broadcast to `out`): 0 on dims where `in` is broadcast.
inline void broadcast_strides(const Dims& in, const Dims& out, int64_t* strides) {
  int64_t s = 1;
  for (int i = out.rank - 1; i >= 0; --i) {
    int ii = in.rank - out.rank + i;
    int64_t d = ii >= 0 ? in.d[ii] : 1;
    strides[i] = d == 1 ? 0 : s;  // a size-1 (or missing) dim never advances the offset
    s *= d;
  }
}

template <int N>
struct StridedLoop {
  int rank = 0;  // merged rank, >= 1
  int64_t dims[MN_MAX_RANK] = {0};
  int64_t strides[N][MN_MAX_RANK] = {};
  int64_t total = 0;

  // `in_strides[k]` holds out.rank strides of operand k.
  void init(const Dims& out, const int64_t* const in_strides[N]) {
    total = out.numel();
    // Walk from the innermost dim outwards, skipping size-1 dims and merging a dim into
    // the current (inner) one when every operand steps through both contiguously.
    int64_t rd[MN_MAX_RANK], rs[N][MN_MAX_RANK];  // reversed: index 0 = innermost
    int r = 0;
    for (int i = out.rank - 1; i >= 0; --i) {
      if (out.d[i] == 1) continue;
      bool merge = r > 0;
      for (int k = 0; k < N && merge; ++k) merge = in_strides[k][i] == rs[k][r - 1] * rd[r - 1];
      if (merge) {
        rd[r - 1] *= out.d[i];
      } else {
        rd[r] = out.d[i];
        for (int k = 0; k < N; ++k) rs[k][r] = in_strides[k][i];
        ++r;
      }
    }
    if (r == 0) {  // a scalar (or all-ones) output: one element
      rd[0] = 1;
      for (int k = 0; k < N; ++k) rs[k][0] = 0;
      r = 1;
    }
    rank = r;
    for (int i = 0; i < r; ++i) {
      dims[i] = rd[r - 1 - i];
      for (int k = 0; k < N; ++k) strides[k][i] = rs[k][r - 1 - i];
    }
  }

  // Calls fn(out_index, in_offsets[N], in_steps[N], count) for consecutive runs covering
  // output elements [begin, end): element j of a run is output out_index + j and reads
  // operand k at in_offsets[k] + j * in_steps[k].
  template <class Fn>
  void for_each_run(int64_t begin, int64_t end, Fn&& fn) const {
    if (begin >= end) return;
    const int last = rank - 1;
    int64_t idx[MN_MAX_RANK];
    int64_t rem = begin;
    for (int i = last; i >= 0; --i) {
      idx[i] = rem % dims[i];
      rem /= dims[i];
    }
    int64_t off[N], step[N];
    for (int k = 0; k < N; ++k) step[k] = strides[k][last];
    int64_t pos = begin;
    while (pos < end) {
      for (int k = 0; k < N; ++k) {
        int64_t o = 0;
        for (int i = 0; i <= last; ++i) o += idx[i] * strides[k][i];
        off[k] = o;
      }
      int64_t count = std::min(dims[last] - idx[last], end - pos);
      fn(pos, static_cast<const int64_t*>(off), static_cast<const int64_t*>(step), count);
      pos += count;
      idx[last] += count;
      for (int i = last; i > 0 && idx[i] == dims[i]; --i) {  // carry
        idx[i] = 0;
        ++idx[i - 1];
      }
    }
  }
};

// A loop over `out` for operands of the given dense shapes (each broadcasting to out).
template <int N>
inline StridedLoop<N> broadcast_loop(const Dims& out, const Dims* const in[N]) {
  int64_t s[N][MN_MAX_RANK];
  const int64_t* p[N];
  for (int k = 0; k < N; ++k) {
    broadcast_strides(*in[k], out, s[k]);
    p[k] = s[k];
  }
  StridedLoop<N> loop;
  loop.init(out, p);
  return loop;
}

}  // namespace cpu_dense
}  // namespace minnow
