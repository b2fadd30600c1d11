// Helpers shared by the data-movement ops added for ONNX coverage (Gather, Slice, Split,
// Expand, Tile, Pad, ...): reading small integer inputs at run time (their values are
// not known at prepare, where non-constant inputs come without data) and copying
// elements of any type by size, so one kernel serves every dtype.
#pragma once

#include <vector>

#include "broadcast.h"

namespace minnow {
namespace cpu_dense {

// The values of an int64/int32 tensor (shape operands: starts, pads, repeats, ...).
// Fails through `k` when the tensor has another type or no data.
inline std::vector<int64_t> read_ints(const OpKernel& k, const mn_tensor& t, const char* what) {
  const int64_t n = numel(t);
  std::vector<int64_t> v(static_cast<size_t>(n < 0 ? 0 : n));
  if (n > 0 && !t.data) k.fail(std::string(what) + " has no data");
  if (t.dtype == MN_I64) {
    const int64_t* p = static_cast<const int64_t*>(t.data);
    for (int64_t i = 0; i < n; ++i) v[i] = p[i];
  } else if (t.dtype == MN_I32) {
    const int32_t* p = static_cast<const int32_t*>(t.data);
    for (int64_t i = 0; i < n; ++i) v[i] = p[i];
  } else {
    k.fail(std::string(what) + " has dtype " + dtype_name(t.dtype) + ", expected int64 or int32");
  }
  return v;
}

// Bid-side check that an element type can be moved by size (1, 2, 4 or 8 bytes).
inline void require_movable(const Node& node, int32_t dt) {
  const size_t es = plugin::dtype_size(dt);
  if (es != 1 && es != 2 && es != 4 && es != 8)
    node.fail(std::string("element type ") + dtype_name(dt) + " is not supported",
              MN_ERR_UNSUPPORTED);
}

// y[pos + j] = x[off + j * step] over the runs of `loop` (one operand); T is an unsigned
// integer of the element size, so any dtype is copied bit-exactly.
template <class T>
void strided_gather_copy(const RunContext& ctx, const StridedLoop<1>& loop, const void* src,
                         int64_t base, void* dst) {
  const T* x = static_cast<const T*>(src) + base;
  T* y = static_cast<T*>(dst);
  auto body = [&](size_t b, size_t e) {
    loop.for_each_run(static_cast<int64_t>(b), static_cast<int64_t>(e),
                      [&](int64_t pos, const int64_t* off, const int64_t* step, int64_t n) {
                        const T* xs = x + off[0];
                        T* ys = y + pos;
                        const int64_t s = step[0];
                        for (int64_t i = 0; i < n; ++i) ys[i] = xs[i * s];
                      });
  };
  ctx.parallel_for(static_cast<size_t>(loop.total), kElementwiseGrain, std::move(body));
}

// Dense output of shape `od` read from `src` at element offset `base` plus
// sum(idx[i] * strides[i]) (strides may be 0 or negative): Expand, Slice, Tile pieces.
inline void strided_copy_any(const OpKernel& k, const RunContext& ctx, int32_t dtype,
                             const Dims& od, const int64_t* strides, const void* src,
                             int64_t base, void* dst) {
  if (od.numel() == 0) return;
  const int64_t* sp[1] = {strides};
  StridedLoop<1> loop;
  loop.init(od, sp);
  switch (plugin::dtype_size(dtype)) {
    case 1: strided_gather_copy<uint8_t>(ctx, loop, src, base, dst); break;
    case 2: strided_gather_copy<uint16_t>(ctx, loop, src, base, dst); break;
    case 4: strided_gather_copy<uint32_t>(ctx, loop, src, base, dst); break;
    case 8: strided_gather_copy<uint64_t>(ctx, loop, src, base, dst); break;
    default: k.fail(std::string("cannot copy elements of type ") + dtype_name(dtype));
  }
}

// Dense row-major strides of `d`.
inline void dense_strides(const Dims& d, int64_t* s) {
  int64_t acc = 1;
  for (int i = d.rank - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= d[i];
  }
}

}  // namespace cpu_dense
}  // namespace minnow

namespace minnow {
namespace cpu_dense {

// Output element (o_0..o_{r-1}) = input element (map[0][o_0], ..., map[r-1][o_{r-1}]),
// or `fill` (an element's bytes) where some map entry is -1. One per-dim table covers
// Pad (constant/reflect/edge, negative pads crop) and Tile (o mod d); the work is split
// by output rows (all dims but the last).
template <class T>
void mapped_copy_t(const RunContext& ctx, const Dims& xd, const Dims& od,
                   const std::vector<std::vector<int64_t>>& map, const void* src, void* dst,
                   const void* fill) {
  const T* x = static_cast<const T*>(src);
  T* y = static_cast<T*>(dst);
  T fv;
  std::memcpy(&fv, fill, sizeof(T));
  const int r = od.rank;
  const int64_t w = od[r - 1], rows = od.prod(0, r - 1);
  int64_t xs[MN_MAX_RANK];
  dense_strides(xd, xs);
  const std::vector<int64_t>& last = map[r - 1];
  auto body = [&](size_t b, size_t e) {
    for (size_t row = b; row < e; ++row) {
      int64_t rem = static_cast<int64_t>(row), base = 0;
      bool inside = true;
      for (int i = r - 2; i >= 0; --i) {
        const int64_t m = map[i][rem % od[i]];
        rem /= od[i];
        if (m < 0) inside = false;
        base += m * xs[i];
      }
      T* yr = y + static_cast<int64_t>(row) * w;
      if (!inside) {
        for (int64_t j = 0; j < w; ++j) yr[j] = fv;
        continue;
      }
      const T* xr = x + base;
      for (int64_t j = 0; j < w; ++j) yr[j] = last[j] < 0 ? fv : xr[last[j]];
    }
  };
  ctx.parallel_for(static_cast<size_t>(rows), grain_for(static_cast<double>(w)), std::move(body));
}

inline void mapped_copy(const OpKernel& k, const RunContext& ctx, int32_t dtype, const Dims& xd,
                        const Dims& od, const std::vector<std::vector<int64_t>>& map,
                        const void* src, void* dst, const void* fill) {
  if (od.numel() == 0) return;
  if (od.rank == 0) {  // a scalar: one element, no dims to map
    std::memcpy(dst, src, plugin::dtype_size(dtype));
    return;
  }
  switch (plugin::dtype_size(dtype)) {
    case 1: mapped_copy_t<uint8_t>(ctx, xd, od, map, src, dst, fill); break;
    case 2: mapped_copy_t<uint16_t>(ctx, xd, od, map, src, dst, fill); break;
    case 4: mapped_copy_t<uint32_t>(ctx, xd, od, map, src, dst, fill); break;
    case 8: mapped_copy_t<uint64_t>(ctx, xd, od, map, src, dst, fill); break;
    default: k.fail(std::string("cannot copy elements of type ") + dtype_name(dtype));
  }
}

}  // namespace cpu_dense
}  // namespace minnow
