// GlobalAveragePool / GlobalMaxPool: (N, C, spatial...) -> (N, C, 1, ...), one reduction
// per (n, c) plane.
#pragma once

#include <limits>

#include "common.h"
#include "kernels/eltwise.h"

namespace minnow {
namespace cpu_dense {

class GlobalPoolKernel final : public OpKernel {
 public:
  GlobalPoolKernel(const Node& node, const char* kernel_name, bool max)
      : OpKernel(node, kernel_name), max_(max) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], MN_F32, "X");
    const Dims d = Dims::of(in[0]);
    if (d.rank < 2) fail("X " + shape_str(in[0]) + " must have rank >= 2 (N, C, ...)");
    Dims od = d;
    for (int i = 2; i < od.rank; ++i) od[i] = 1;
    check_output(out, num_outputs, 0, MN_F32, od);
    const float* x = static_cast<const float*>(in[0].data);
    float* y = static_cast<float*>(out[0].data);
    const int64_t plane = d.prod(2, d.rank);
    const bool is_max = max_;
    auto body = [&](size_t r0, size_t r1) {
      if (!is_max) {  // SIMD; the double-sum reference is kernels::f32_global_avg_ref
        kernels::f32_global_avg(x + r0 * plane, static_cast<int64_t>(r1 - r0), plane, y + r0);
        return;
      }
      for (size_t r = r0; r < r1; ++r) {
        const float* xp = x + r * plane;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < plane; ++i)
          if (xp[i] > m || is_nan(xp[i])) m = xp[i];
        y[r] = m;
      }
    };
    ctx.parallel_for(static_cast<size_t>(d[0] * d[1]), grain_for(static_cast<double>(plane)),
                     std::move(body));
  }

 private:
  bool max_;
};

inline double global_pool_bid(const Node& node) {
  require_inputs(node, 1, 1);
  require_input_dtype(node, 0, {MN_F32});
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x) && x.rank < 2) node.fail("X " + shape_str(x) + " must have rank >= 2");
  return numel_estimate(x);
}

}  // namespace cpu_dense
}  // namespace minnow
