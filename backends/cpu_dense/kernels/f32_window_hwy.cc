// window_copy_runs (kernels/im2col.h): the panel rows of a B block whose pixels span more
// than one output row, copied run by run from the window, compiled per Highway target.
// The loop it replaces, built for the baseline ISA, moved 16 bytes at a time with a
// scalar tail per run: on resnet18 (AVX-512) window_block was 2.9 % of the run, mostly
// there. Whole vectors, then the run's last floats through a mask where the target's
// masked loads and stores never touch the masked-off lanes (AVX2, AVX-512), one by one
// elsewhere.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/f32_window_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/im2col.h"

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_dense {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void CopyRunsImpl(const float* win, const int32_t* boff, int64_t kc, const WindowRuns& r,
                  int32_t f, int32_t l, int64_t nr, float* o) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t kk = 0; kk < kc; ++kk) {
    const float* wk = win + boff[kk];
    float* ok = o + kk * nr;
    for (int32_t i = f; i < l; ++i) {
      float* to = ok + r.lane[i];
      const float* from = wk + r.src[i];
      const int64_t n = r.len[i];
      int64_t j = 0;
      for (; j + L <= n; j += L) hn::StoreU(hn::LoadU(d, from + j), d, to + j);
      if (j == n) continue;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      const auto m = hn::FirstN(d, static_cast<size_t>(n - j));
      hn::BlendedStore(hn::MaskedLoad(m, d, from + j), m, d, to + j);
#else
      for (; j < n; ++j) to[j] = from[j];
#endif
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

HWY_EXPORT(CopyRunsImpl);

void window_copy_runs(const float* win, const int32_t* boff, int64_t kc, const WindowRuns& r,
                      int32_t first, int32_t last, int64_t nr, float* dst) {
  HWY_DYNAMIC_DISPATCH(CopyRunsImpl)(win, boff, kc, r, first, last, nr, dst);
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
#endif
