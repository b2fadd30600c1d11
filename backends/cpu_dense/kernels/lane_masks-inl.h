// Masks of the lanes that fall inside a row, for the kernels that read or write rows in
// place with masked loads and stores (3x3 depthwise and max pool rows, Winograd's pad and
// output stores). Per Highway target: include it after hwy/highway.h in a file compiled
// through foreach_target.h (the toggle below, as Highway's own -inl headers do).
#if defined(MINNOW_CPU_DENSE_LANE_MASKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINNOW_CPU_DENSE_LANE_MASKS_INL_H_
#undef MINNOW_CPU_DENSE_LANE_MASKS_INL_H_
#else
#define MINNOW_CPU_DENSE_LANE_MASKS_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_dense {
namespace kernels {
namespace HWY_NAMESPACE {

// Lanes i with from <= i < to; either bound may lie outside [0, lanes].
template <class D>
HWY_INLINE hwy::HWY_NAMESPACE::Mask<D> LanesFromTo(D d, int64_t from, int64_t to) {
  namespace hn = hwy::HWY_NAMESPACE;
  const auto upto = hn::FirstN(d, static_cast<size_t>(std::max<int64_t>(0, to)));
  return from > 0 ? hn::AndNot(hn::FirstN(d, static_cast<size_t>(from)), upto) : upto;
}

// The lanes of a vector at column `a` of a row of `width` floats that lie inside the row
// (a may be negative: a left padding).
template <class D>
HWY_INLINE hwy::HWY_NAMESPACE::Mask<D> LanesInRow(D d, int64_t a, int64_t width) {
  return LanesFromTo(d, -a, width - a);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
HWY_AFTER_NAMESPACE();

#endif  // MINNOW_CPU_DENSE_LANE_MASKS_INL_H_
