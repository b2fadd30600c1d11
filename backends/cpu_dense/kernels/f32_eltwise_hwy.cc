// SIMD element-wise kernels (kernels/eltwise.h), compiled per Highway target with dynamic
// dispatch. Whole vectors are processed unaligned; the tail (fewer than one vector) runs
// the scalar expression of the reference, so every element gets the same value as there.
// Activations use compare-and-select rather than Min/Max: Max(NaN, 0) differs between
// targets, the selects give the reference's NaN behaviour everywhere.
#include <algorithm>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/f32_eltwise_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/eltwise.h"

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace cpu_dense {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Applies vf to whole vectors of x and sf to the tail.
template <class VF, class SF>
HWY_INLINE void Map(const float* x, float* y, int64_t n, VF vf, SF sf) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + L);
    hn::StoreU(vf(d, v0), d, y + i);
    hn::StoreU(vf(d, v1), d, y + i + L);
  }
  for (; i + L <= n; i += L) hn::StoreU(vf(d, hn::LoadU(d, x + i)), d, y + i);
  for (; i < n; ++i) y[i] = sf(x[i]);
}

void ReluImpl(const float* x, float* y, int64_t n) {
  Map(
      x, y, n,
      [](auto d, auto v) HWY_ATTR {
        const auto z = hn::Zero(d);
        return hn::IfThenElse(hn::Gt(v, z), v, z);
      },
      [](float v) { return v > 0.0f ? v : 0.0f; });
}

void ClipImpl(const float* x, float* y, int64_t n, float lo, float hi) {
  Map(
      x, y, n,
      [lo, hi](auto d, auto v) HWY_ATTR {
        const auto vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
        const auto t = hn::IfThenElse(hn::Lt(v, vlo), vlo, v);
        return hn::IfThenElse(hn::Gt(t, vhi), vhi, t);
      },
      [lo, hi](float v) {
        const float t = v < lo ? lo : v;
        return t > hi ? hi : t;
      });
}

void LeakyReluImpl(const float* x, float* y, int64_t n, float alpha) {
  Map(
      x, y, n,
      [alpha](auto d, auto v) HWY_ATTR {
        return hn::IfThenElse(hn::Ge(v, hn::Zero(d)), v, hn::Mul(v, hn::Set(d, alpha)));
      },
      [alpha](float v) { return v >= 0.0f ? v : alpha * v; });
}

// One binary op over the three run patterns; a scalar operand is broadcast once.
template <class VF, class SF>
HWY_INLINE void Binary(const float* a, bool as, const float* b, bool bs, float* y, int64_t n,
                       VF vf, SF sf) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  if (as && bs) {
    const float v = sf(a[0], b[0]);
    for (; i < n; ++i) y[i] = v;
  } else if (as) {
    const float s = a[0];
    const auto va = hn::Set(d, s);
    for (; i + L <= n; i += L) hn::StoreU(vf(va, hn::LoadU(d, b + i)), d, y + i);
    for (; i < n; ++i) y[i] = sf(s, b[i]);
  } else if (bs) {
    const float s = b[0];
    const auto vb = hn::Set(d, s);
    for (; i + L <= n; i += L) hn::StoreU(vf(hn::LoadU(d, a + i), vb), d, y + i);
    for (; i < n; ++i) y[i] = sf(a[i], s);
  } else {
    for (; i + L <= n; i += L)
      hn::StoreU(vf(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, y + i);
    for (; i < n; ++i) y[i] = sf(a[i], b[i]);
  }
}

void BinaryImpl(BinaryKind op, const float* a, bool as, const float* b, bool bs, float* y,
                int64_t n) {
  switch (op) {
    case BinaryKind::kAdd:
      return Binary(
          a, as, b, bs, y, n, [](auto p, auto q) HWY_ATTR { return hn::Add(p, q); },
          [](float p, float q) { return p + q; });
    case BinaryKind::kSub:
      return Binary(
          a, as, b, bs, y, n, [](auto p, auto q) HWY_ATTR { return hn::Sub(p, q); },
          [](float p, float q) { return p - q; });
    case BinaryKind::kMul:
      return Binary(
          a, as, b, bs, y, n, [](auto p, auto q) HWY_ATTR { return hn::Mul(p, q); },
          [](float p, float q) { return p * q; });
    case BinaryKind::kDiv:
      return Binary(
          a, as, b, bs, y, n, [](auto p, auto q) HWY_ATTR { return hn::Div(p, q); },
          [](float p, float q) { return p / q; });
  }
}

// One vector of y at a time (the parts and the addend are read once each; memory-bound).
void SumClampImpl(const float* const* xs, int64_t count, const float* addend, float* y, int64_t n, float lo,
                  float hi) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto vlo = hn::Set(d, lo), vhi = hn::Set(d, hi);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    auto v = hn::LoadU(d, xs[0] + i);
    for (int64_t j = 1; j < count; ++j) v = hn::Add(v, hn::LoadU(d, xs[j] + i));
    if (addend) v = hn::Add(v, hn::LoadU(d, addend + i));
    hn::StoreU(hn::Min(hn::Max(v, vlo), vhi), d, y + i);
  }
  for (; i < n; ++i) {
    float v = xs[0][i];
    for (int64_t j = 1; j < count; ++j) v += xs[j][i];
    if (addend) v += addend[i];
    y[i] = std::min(std::max(v, lo), hi);
  }
}

// Two vector accumulators per plane (planes are small feature maps, 7x7 to 56x56).
void GlobalAvgImpl(const float* x, int64_t planes, int64_t plane, float* y) {
  const hn::ScalableTag<float> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = x + p * plane;
    auto s0 = hn::Zero(d), s1 = hn::Zero(d);
    int64_t i = 0;
    for (; i + 2 * L <= plane; i += 2 * L) {
      s0 = hn::Add(s0, hn::LoadU(d, xp + i));
      s1 = hn::Add(s1, hn::LoadU(d, xp + i + L));
    }
    for (; i + L <= plane; i += L) s0 = hn::Add(s0, hn::LoadU(d, xp + i));
    float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
    for (; i < plane; ++i) s += xp[i];
    y[p] = plane ? s / static_cast<float>(plane) : 0.0f;
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

HWY_EXPORT(ReluImpl);
HWY_EXPORT(ClipImpl);
HWY_EXPORT(LeakyReluImpl);
HWY_EXPORT(BinaryImpl);
HWY_EXPORT(GlobalAvgImpl);
HWY_EXPORT(SumClampImpl);

void f32_relu(const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(ReluImpl)(x, y, n); }
void f32_clip(const float* x, float* y, int64_t n, float lo, float hi) {
  HWY_DYNAMIC_DISPATCH(ClipImpl)(x, y, n, lo, hi);
}
void f32_leaky_relu(const float* x, float* y, int64_t n, float alpha) {
  HWY_DYNAMIC_DISPATCH(LeakyReluImpl)(x, y, n, alpha);
}
void f32_binary(BinaryKind op, const float* a, bool as, const float* b, bool bs, float* y,
                int64_t n) {
  HWY_DYNAMIC_DISPATCH(BinaryImpl)(op, a, as, b, bs, y, n);
}
void f32_sum_clamp(const float* const* xs, int64_t count, const float* addend, float* y, int64_t n, float lo,
                   float hi) {
  HWY_DYNAMIC_DISPATCH(SumClampImpl)(xs, count, addend, y, n, lo, hi);
}
void f32_global_avg(const float* x, int64_t planes, int64_t plane, float* y) {
  HWY_DYNAMIC_DISPATCH(GlobalAvgImpl)(x, planes, plane, y);
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
#endif  // HWY_ONCE
