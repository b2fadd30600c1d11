// Reference element-wise kernels (kernels/eltwise.h): the definitions the SIMD versions
// in f32_eltwise_hwy.cc are tested against.
#include "kernels/eltwise.h"

#include <algorithm>

namespace minnow {
namespace cpu_dense {
namespace kernels {

void f32_relu_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void f32_clip_ref(const float* x, float* y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}

void f32_leaky_relu_ref(const float* x, float* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
}

namespace {
template <class F>
void binary_loop(F f, const float* a, bool as, const float* b, bool bs, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(as ? a[0] : a[i], bs ? b[0] : b[i]);
}
}  // namespace

void f32_binary_ref(BinaryKind op, const float* a, bool as, const float* b, bool bs, float* y,
                    int64_t n) {
  switch (op) {
    case BinaryKind::kAdd:
      return binary_loop([](float p, float q) { return p + q; }, a, as, b, bs, y, n);
    case BinaryKind::kSub:
      return binary_loop([](float p, float q) { return p - q; }, a, as, b, bs, y, n);
    case BinaryKind::kMul:
      return binary_loop([](float p, float q) { return p * q; }, a, as, b, bs, y, n);
    case BinaryKind::kDiv:
      return binary_loop([](float p, float q) { return p / q; }, a, as, b, bs, y, n);
  }
}

void f32_sum_clamp_ref(const float* const* xs, int64_t count, const float* addend, float* y, int64_t n, float lo,
                       float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float v = xs[0][i];
    for (int64_t j = 1; j < count; ++j) v += xs[j][i];
    if (addend) v += addend[i];
    y[i] = std::min(std::max(v, lo), hi);
  }
}

void f32_global_avg_ref(const float* x, int64_t planes, int64_t plane, float* y) {
  for (int64_t p = 0; p < planes; ++p) {
    double s = 0;
    for (int64_t i = 0; i < plane; ++i) s += x[p * plane + i];
    y[p] = plane ? static_cast<float>(s / static_cast<double>(plane)) : 0.0f;
  }
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
