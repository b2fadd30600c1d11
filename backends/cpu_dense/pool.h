// MaxPool / AveragePool over 1-3 spatial dims (lifted to 3-D like Conv). One work item is
// one output row (n, c, od, oh); each output element scans the taps of its window that
// fall inside the input, the valid tap range being computed per axis so padding is never
// read.
#pragma once

#include <limits>

#include "pool_simd.h"
#include "spatial.h"

namespace minnow {
namespace cpu_dense {

enum class PoolKind { kMax, kAverage };

// Work of a pool: one step per window tap and output element.
inline double pool_flops(const SpatialAttrs& a, const mn_tensor& out) {
  double taps = 1;
  for (int i = 0; i < a.nsp; ++i) taps *= static_cast<double>(a.kernel[i]);
  return static_cast<double>(numel(out)) * taps;
}

// Run-time checks every pool kernel makes: X present with `dtype` and rank 2 + nsp, the
// output's spatial dims those the attributes give for X, output 0 of `dtype`. Fills the
// resolved axes and returns the output dims.
inline Dims pool_geometry(const OpKernel& k, const SpatialAttrs& a, int32_t dtype,
                          const mn_tensor* in, int num_inputs, const mn_tensor* out,
                          int num_outputs, Axis ax[kMaxSpatial]) {
  if (num_inputs < 1) k.fail("input missing at run time");
  k.check_dtype(in[0], dtype, "X");
  const int nsp = a.nsp;
  if (in[0].rank != nsp + 2)
    k.fail("X " + shape_str(in[0]) + " must have rank " + std::to_string(nsp + 2) + " for a " +
           std::to_string(nsp) + "-D kernel_shape");
  if (num_outputs < 1 || out[0].rank != nsp + 2)
    k.fail("output must have rank " + std::to_string(nsp + 2));
  std::string err = resolve_geometry(a, in[0].dims + 2, out[0].dims + 2, ax);
  if (!err.empty()) k.fail(err);
  Dims od = Dims::of(in[0]);
  for (int i = 0; i < nsp; ++i) od[2 + i] = out[0].dims[2 + i];
  k.check_output(out, num_outputs, 0, dtype, od);
  return od;
}

class PoolKernel final : public OpKernel {
 public:
  PoolKernel(const Node& node, const char* kernel_name, const SpatialAttrs& attrs, PoolKind kind,
             bool count_include_pad)
      : OpKernel(node, kernel_name),
        attrs_(attrs),
        kind_(kind),
        count_include_pad_(count_include_pad) {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return pool_flops(attrs_, out[0]);
  }

  // MaxPool over 1-D / 2-D windows runs the SIMD plane kernel (pool_simd.h).
  size_t scratch_bytes(const mn_tensor* in, int num_inputs, const mn_tensor* out,
                       int num_outputs) const override {
    return scratch_bytes_for_threads(in, num_inputs, out, num_outputs, 0);
  }
  size_t scratch_bytes_for_threads(const mn_tensor* in, int num_inputs, const mn_tensor* out,
                                   int, int threads) const override {
    kernels::ConvShape s;
    Axis ax[kMaxSpatial];
    if (kind_ != PoolKind::kMax || num_inputs < 1 || in[0].rank != attrs_.nsp + 2 ||
        out[0].rank != attrs_.nsp + 2 ||
        !resolve_geometry(attrs_, in[0].dims + 2, out[0].dims + 2, ax).empty() ||
        !maxpool_simd_shape(ax, in[0].dims[0], in[0].dims[1], &s))
      return 0;
    return maxpool_simd_scratch(s, threads);
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    Axis ax[kMaxSpatial];
    const Dims od = pool_geometry(*this, attrs_, MN_F32, in, num_inputs, out, num_outputs, ax);

    const float* x = static_cast<const float*>(in[0].data);
    float* y = static_cast<float*>(out[0].data);
    const Axis D = ax[0], H = ax[1], W = ax[2];
    const int64_t rows = od[0] * od[1] * D.out * H.out;
    const int64_t taps = D.k * H.k * W.k;
    const bool is_max = kind_ == PoolKind::kMax;
    const bool include_pad = count_include_pad_;
    kernels::ConvShape simd;
    if (is_max && maxpool_simd_shape(ax, od[0], od[1], &simd)) {
      maxpool_simd_run(ctx, simd, x, y);
      return;
    }
    auto body = [&](size_t r0, size_t r1) {
      for (int64_t r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
        const int64_t oh = r % H.out;
        const int64_t od_ = (r / H.out) % D.out;
        const int64_t nc = r / (H.out * D.out);  // n * C + c
        const float* xc = x + nc * D.in * H.in * W.in;
        float* yr = y + r * W.out;
        const int64_t d_start = od_ * D.s - D.pb, h_start = oh * H.s - H.pb;
        int64_t kd0, kd1, kh0, kh1;
        valid_taps(d_start, D.d, D.k, D.in, &kd0, &kd1);
        valid_taps(h_start, H.d, H.k, H.in, &kh0, &kh1);
        const int64_t dh_pad = padded_taps(D, d_start) * padded_taps(H, h_start);
        for (int64_t ow = 0; ow < W.out; ++ow) {
          const int64_t w_start = ow * W.s - W.pb;
          int64_t kw0, kw1;
          valid_taps(w_start, W.d, W.k, W.in, &kw0, &kw1);
          if (is_max) {
            // A window lying wholly in the padding has no element: -inf (the max of nothing).
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t kd = kd0; kd < kd1; ++kd)
              for (int64_t kh = kh0; kh < kh1; ++kh) {
                const float* xrow = xc + ((d_start + kd * D.d) * H.in + h_start + kh * H.d) * W.in;
                for (int64_t kw = kw0; kw < kw1; ++kw) {
                  const float v = xrow[w_start + kw * W.d];
                  if (v > m || is_nan(v)) m = v;  // NaN propagates, as in max()
                }
              }
            yr[ow] = m;
          } else {
            float sum = 0.0f;
            for (int64_t kd = kd0; kd < kd1; ++kd)
              for (int64_t kh = kh0; kh < kh1; ++kh) {
                const float* xrow = xc + ((d_start + kd * D.d) * H.in + h_start + kh * H.d) * W.in;
                for (int64_t kw = kw0; kw < kw1; ++kw) sum += xrow[w_start + kw * W.d];
              }
            const int64_t count = include_pad ? dh_pad * padded_taps(W, w_start)
                                              : (kd1 - kd0) * (kh1 - kh0) * (kw1 - kw0);
            // A window with nothing to average (only possible with ceil_mode or huge pads
            // and count_include_pad=0) gives 0 rather than 0/0.
            yr[ow] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
          }
        }
      }
    };
    ctx.parallel_for(static_cast<size_t>(rows), grain_for(static_cast<double>(W.out * taps)),
                     std::move(body));
  }

 private:
  // Taps of a window starting at `start` that lie inside the input or its padding (what
  // count_include_pad=1 divides by): the part of a ceil_mode window hanging past the end
  // padding does not count, as in onnxruntime and PyTorch.
  static int64_t padded_taps(const Axis& a, int64_t start) {
    const int64_t limit = a.in + a.pe;  // start >= -pb always holds
    if (start >= limit) return 0;
    return std::min(a.k, (limit - 1 - start) / a.d + 1);
  }

  SpatialAttrs attrs_;
  PoolKind kind_;
  bool count_include_pad_;
};

// Validation shared by MaxPool and AveragePool bids; returns the parsed attributes.
SpatialAttrs check_pool(const Node& node, bool allow_ceil_mode,
                        std::initializer_list<int32_t> dtypes = {MN_F32});

inline const char* pool_name(PoolKind kind, int nsp) {
  static const char* const names[2][3] = {
      {"f32_maxpool1d_direct", "f32_maxpool2d_direct", "f32_maxpool3d_ref"},
      {"f32_avgpool1d_ref", "f32_avgpool2d_ref", "f32_avgpool3d_ref"}};
  return names[kind == PoolKind::kMax ? 0 : 1][nsp - 1];
}

}  // namespace cpu_dense
}  // namespace minnow
