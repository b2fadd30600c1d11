// direct_conv_planes (kernels/conv.h): an image's channels into zero-padded phase planes,
// compiled per Highway target. Stride 2 de-interleaves each input row by whole vectors
// (ConcatEven of the pair loaded at the phase's first column), the row ends and the
// padding one float at a time; stride 1 is a padded copy.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/f32_phase_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/conv.h"

#include <algorithm>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_dense {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void PhasePlanesImpl(const ConvShape& s, const DirectConvPlan& p, const float* x, int64_t c0, int64_t c1,
                     float* planes) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  (void)L;
  const int64_t st = p.stride, IH = s.in[1], IW = s.in[2], pt = s.pb[1], pl = s.pb[2];
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t rp = 0; rp < st; ++rp)
      for (int64_t cp = 0; cp < st; ++cp) {
        float* plane = planes + ((c * st + rp) * st + cp) * p.plane_floats;
        // Plane columns j read input column j * st + cp - pl: inside the row for
        // j in [j0, j1).
        const int64_t j0 = std::min(p.wh, std::max<int64_t>(0, (pl - cp + st - 1) / st));
        const int64_t j1 = std::max(j0, std::min(p.wh, (IW - 1 - cp + pl) / st + 1));
        for (int64_t i = 0; i < p.hh; ++i) {
          float* row = plane + i * p.wh;
          const int64_t ih = i * st + rp - pt;
          if (ih < 0 || ih >= IH) {
            std::memset(row, 0, size_t(p.wh) * sizeof(float));
            continue;
          }
          const float* xr = x + (c * IH + ih) * IW + cp - pl;  // xr[j * st] is plane column j
          for (int64_t j = 0; j < j0; ++j) row[j] = 0.0f;
          int64_t j = j0;
          if (st == 2) {
#if HWY_TARGET != HWY_SCALAR
            // Whole vectors while their pair stays inside the row (2 L floats from 2 j).
            for (; j + L <= j1 && 2 * (j + L) - 1 + cp - pl <= IW - 1; j += L) {
              const float* q = xr + 2 * j;
              hn::StoreU(hn::ConcatEven(d, hn::LoadU(d, q + L), hn::LoadU(d, q)), d, row + j);
            }
#endif
            for (; j < j1; ++j) row[j] = xr[2 * j];
          } else {
            std::memcpy(row + j0, xr + j0, size_t(j1 - j0) * sizeof(float));
            j = j1;
          }
          for (j = j1; j < p.wh; ++j) row[j] = 0.0f;
        }
        std::memset(plane + p.hh * p.wh, 0, size_t(p.plane_floats - p.hh * p.wh) * sizeof(float));
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

HWY_EXPORT(PhasePlanesImpl);

void direct_conv_planes(const ConvShape& s, const DirectConvPlan& p, const float* x, int64_t c0, int64_t c1,
                        float* planes) {
  HWY_DYNAMIC_DISPATCH(PhasePlanesImpl)(s, p, x, c0, c1, planes);
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
#endif
