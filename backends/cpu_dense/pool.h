// MaxPool / AveragePool over 1-3 spatial dims (lifted to 3-D like Conv). One work item is
// one output row (n, c, od, oh); each output element scans the taps of its window that
// fall inside the input, the valid tap range being computed per axis so padding is never
// read.
#pragma once

#include <limits>

#include "conv_pool.h"
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
        count_include_pad_(count_include_pad) {
    // The SIMD shape where every shape is known now (for fuse_producer).
    const mn_tensor& x = *node.input(0).t;
    const mn_tensor& y = *node.output(0).t;
    Axis ax[kMaxSpatial];
    kernels::ConvShape s;
    if (kind == PoolKind::kMax && TensorRef{&x}.shape_known() && TensorRef{&y}.shape_known() &&
        x.rank == attrs.nsp + 2 && y.rank == x.rank && resolve_geometry(attrs, x.dims + 2, y.dims + 2, ax).empty() &&
        maxpool_simd_shape(ax, x.dims[0], x.dims[1], &s))
      static_shape_ = std::make_unique<kernels::ConvShape>(s);
  }

  const char* name() const override { return conv_ ? conv_pool_kernel_name(conv_plan_) : OpKernel::name(); }

  double flops(const mn_tensor* in, int num_inputs, const mn_tensor* out, int) const override {
    double f = pool_flops(attrs_, out[0]);
    // A fused conv: its multiply-adds (its output, X here, times its K).
    if (conv_ && num_inputs > 0) f += 2.0 * static_cast<double>(numel(in[0])) * static_cast<double>(conv_plan_.conv.K());
    return f;
  }

  // The Conv that alone writes X (mn_kernel.fuse_producer), its clamp included: computed a
  // band of rows at a time as they are pooled (conv_pool.h), where conv_pool_plan says so.
  bool fuse_producer(int input_index, Kernel& producer, int first_extra) override {
    auto* src = dynamic_cast<PackedConvSource*>(&producer);
    if (input_index != 0 || kind_ != PoolKind::kMax || conv_ || !static_shape_ || !src) return false;
    std::shared_ptr<const ConvPacked> conv = src->packed_conv();
    const kernels::ConvShape* cs = src->packed_conv_shape();
    if (!conv || !cs || !conv_pool_plan(*conv, *cs, *static_shape_, &conv_plan_, src->constant_weights())) return false;
    conv_ = std::move(conv);
    conv_first_ = first_extra;
    return true;
  }

  // MaxPool over 1-D / 2-D windows runs the SIMD plane kernel (pool_simd.h).
  size_t scratch_bytes(const mn_tensor* in, int num_inputs, const mn_tensor* out,
                       int num_outputs) const override {
    return scratch_bytes_for_threads(in, num_inputs, out, num_outputs, 0);
  }
  size_t scratch_bytes_for_threads(const mn_tensor* in, int num_inputs, const mn_tensor* out,
                                   int, int threads) const override {
    if (conv_) return conv_pool_scratch_bytes(conv_plan_, threads);
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
    if (conv_) return run_fused(ctx, in, num_inputs, out, num_outputs);
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

  // The fused conv's run: X (the conv's output, no data) as prepared, the conv's X and
  // W from conv_first_ on as the conv was prepared for.
  void run_fused(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out, int num_outputs) const {
    if (num_inputs < conv_first_ + 2) fail("the fused conv's inputs are missing at run time");
    const mn_tensor& cx = in[conv_first_];
    const mn_tensor& cw = in[conv_first_ + 1];
    check_dtype(cx, MN_F32, "the fused conv's X");
    check_dtype(cw, MN_F32, "the fused conv's W");
    const kernels::ConvShape& c = conv_plan_.conv;
    const int64_t want_x[4] = {c.N, c.C, c.in[1], c.in[2]};
    const int64_t want_w[2] = {c.M, c.Cg()};
    if (cx.rank != 4 || !cx.data || !std::equal(want_x, want_x + 4, cx.dims))
      fail("the fused conv's X " + shape_str(cx) + " differs from the shape it was prepared for");
    if (cw.rank != 4 || !cw.data || !std::equal(want_w, want_w + 2, cw.dims) || cw.dims[2] != c.k[1] || cw.dims[3] != c.k[2])
      fail("the fused conv's W " + shape_str(cw) + " differs from the shape it was prepared for");
    const kernels::ConvShape& p = conv_plan_.pool;
    const int64_t want_y[4] = {p.N, p.C, p.out[1], p.out[2]};
    const int64_t want_in[4] = {p.N, p.C, p.in[1], p.in[2]};
    if (num_inputs < 1 || in[0].rank != 4 || !std::equal(want_in, want_in + 4, in[0].dims))
      fail("X " + shape_str(in[0]) + " differs from the shape the fused conv was prepared for");
    if (num_outputs < 1 || out[0].rank != 4 || out[0].dtype != MN_F32 || !out[0].data ||
        !std::equal(want_y, want_y + 4, out[0].dims))
      fail("output " + shape_str(out[0]) + " differs from the shape the fused conv was prepared for");
    conv_pool_run(ctx, *conv_, conv_plan_, static_cast<const float*>(cx.data), static_cast<const float*>(cw.data),
                  static_cast<float*>(out[0].data));
  }

  SpatialAttrs attrs_;
  PoolKind kind_;
  bool count_include_pad_;
  std::unique_ptr<kernels::ConvShape> static_shape_;  // the SIMD max pool's shape, when known at prepare
  // A fused conv (fuse_producer): its packed weights, the pair's plan, where its inputs start.
  std::shared_ptr<const ConvPacked> conv_;
  ConvPoolPlan conv_plan_;
  int conv_first_ = -1;
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
