// Float32 element-wise kernels of cpu_dense: activations (Relu, Clip, LeakyRelu), the
// arithmetic binary ops over the run patterns broadcasting leaves (dense/dense,
// scalar/dense, dense/scalar: per-channel broadcast is a scalar per run) and the global
// average of planes. Each has a plain reference (f32_eltwise.cc) and a Highway version with
// dynamic dispatch (f32_eltwise_hwy.cc) computing the same values: the activations and
// + - * / exactly (compare-and-select, no Min/Max whose NaN handling varies by target),
// the average up to float summation order. Plain C++ interface (no plugin ABI, no TBB).
#pragma once

#include <cstdint>

namespace minnow {
namespace cpu_dense {
namespace kernels {

// y[i] = x[i] > 0 ? x[i] : 0 (NaN -> 0). y may equal x.
void f32_relu(const float* x, float* y, int64_t n);
void f32_relu_ref(const float* x, float* y, int64_t n);

// v = x < lo ? lo : x; y = v > hi ? hi : v (NaN stays NaN; lo > hi gives hi). y may equal x.
void f32_clip(const float* x, float* y, int64_t n, float lo, float hi);
void f32_clip_ref(const float* x, float* y, int64_t n, float lo, float hi);

// y[i] = x[i] >= 0 ? x[i] : alpha * x[i]. y may equal x.
void f32_leaky_relu(const float* x, float* y, int64_t n, float alpha);
void f32_leaky_relu_ref(const float* x, float* y, int64_t n, float alpha);

// y[i] = min(max(xs[0][i] + xs[1][i] + ... + xs[count - 1][i] (+ addend[i]), lo), hi), summed
// in that order, for i < n (count >= 1): the K-split GEMM's partial sums (conv.h) finished
// as its epilogue would (Max then Min, whose NaN handling is the target's, as there).
// `addend` is null or n floats; y may equal it or xs[0].
void f32_sum_clamp(const float* const* xs, int64_t count, const float* addend, float* y, int64_t n, float lo,
                   float hi);
void f32_sum_clamp_ref(const float* const* xs, int64_t count, const float* addend, float* y, int64_t n, float lo,
                       float hi);

enum class BinaryKind : int { kAdd, kSub, kMul, kDiv };

// y[i] = A(i) op B(i), A(i) = a_scalar ? a[0] : a[i] (B likewise). y may equal a or b.
void f32_binary(BinaryKind op, const float* a, bool a_scalar, const float* b, bool b_scalar,
                float* y, int64_t n);
void f32_binary_ref(BinaryKind op, const float* a, bool a_scalar, const float* b, bool b_scalar,
                    float* y, int64_t n);

// y[p] = mean of x[p * plane .. (p + 1) * plane), p < planes (plane 0: y = 0). The
// reference sums in double; the SIMD version in float with several accumulators.
void f32_global_avg(const float* x, int64_t planes, int64_t plane, float* y);
void f32_global_avg_ref(const float* x, int64_t planes, int64_t plane, float* y);

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
