#include "conv_packed.h"

#include <cstring>

namespace minnow {
namespace cpu_dense {

int64_t scratch_slots(int64_t tasks, int threads) {
  if (threads <= 1) return 1;
  return std::max<int64_t>(1, std::min<int64_t>({tasks, kernels::kConvMaxSlots, 4 * threads}));
}

kernels::ConvShape conv_shape(const Axis ax[kMaxSpatial], int64_t N, int64_t C, int64_t M,
                              int64_t group) {
  kernels::ConvShape s;
  s.N = N;
  s.C = C;
  s.M = M;
  s.group = group;
  for (int i = 0; i < kMaxSpatial; ++i) {
    s.in[i] = ax[i].in;
    s.out[i] = ax[i].out;
    s.k[i] = ax[i].k;
    s.s[i] = ax[i].s;
    s.d[i] = ax[i].d;
    s.pb[i] = ax[i].pb;
  }
  return s;
}

ConvPacked::ConvPacked(const float* w, int64_t M, int64_t Cg, int64_t taps, int64_t group,
                       const float* bias, int spatial) {
  // Depthwise (one input channel per group, any multiplier), 1-D or 2-D: direct kernel.
  depthwise_ = Cg == 1 && group > 1 && spatial <= 2;
  if (depthwise_) {
    dw_w_ = kernels::alloc_floats(size_t(M * taps));
    std::memcpy(dw_w_.get(), w, size_t(M * taps) * sizeof(float));
    if (bias) {
      dw_b_ = kernels::alloc_floats(size_t(M));
      std::memcpy(dw_b_.get(), bias, size_t(M) * sizeof(float));
    }
  } else {
    gemm_ = kernels::pack_conv_weights(w, M, Cg * taps, group, bias);
  }
}

size_t ConvPacked::scratch_bytes(const kernels::ConvShape& s) const {
  if (depthwise_)
    return size_t(std::min<int64_t>(s.N * s.M, kernels::kConvMaxSlots)) *
           size_t(kernels::dwconv_slot_floats(s)) * sizeof(float);
  // The widest column block (one thread's plan) and the most tasks any thread count
  // gives: every column panel and row panel its own task.
  const kernels::ConvPlan p = kernels::plan_conv(s, 1);
  const int64_t nr = kernels::gemm_nr();
  const int64_t max_tasks = s.N * s.group * ((s.P() + nr - 1) / nr) *
                            ((s.Mg() + kernels::kGemmMR - 1) / kernels::kGemmMR);
  return size_t(std::min<int64_t>(max_tasks, kernels::kConvMaxSlots)) * size_t(p.slot_floats) *
         sizeof(float);
}

void ConvPacked::run(const RunContext& ctx, const kernels::ConvShape& s, const float* x,
                     const float* w_rows, float* y) const {
  const float lo = -std::numeric_limits<float>::infinity();
  const float hi = std::numeric_limits<float>::infinity();
  const int threads = ctx.num_threads();
  float* scratch = static_cast<float*>(ctx.scratch());
  if (depthwise_) {
    const int64_t planes = s.N * s.M;
    const int64_t slot_floats = kernels::dwconv_slot_floats(s);
    const int64_t slots = scratch_slots(planes, threads);
    if (ctx.scratch_size() < size_t(slots * slot_floats) * sizeof(float))
      throw PluginError("depthwise conv: scratch too small");
    const float* w = dw_w_.get();
    const float* b = dw_b_.get();
    ctx.parallel_for(size_t(slots), 1, [&](size_t s0, size_t s1) {
      for (size_t sl = s0; sl < s1; ++sl) {
        float* slot = scratch + int64_t(sl) * slot_floats;
        const int64_t p0 = planes * int64_t(sl) / slots, p1 = planes * int64_t(sl + 1) / slots;
        for (int64_t pl = p0; pl < p1; ++pl) kernels::dwconv_plane(s, pl, x, w, b, y, slot, lo, hi);
      }
    });
    return;
  }
  const kernels::ConvPlan p = kernels::plan_conv(s, threads);
  const int64_t slots = scratch_slots(p.tasks, threads);
  if (ctx.scratch_size() < size_t(slots * p.slot_floats) * sizeof(float))
    throw PluginError("conv: scratch too small");
  ctx.parallel_for(size_t(slots), 1, [&](size_t s0, size_t s1) {
    for (size_t sl = s0; sl < s1; ++sl) {
      float* slot = scratch + int64_t(sl) * p.slot_floats;
      const int64_t t0 = p.tasks * int64_t(sl) / slots, t1 = p.tasks * int64_t(sl + 1) / slots;
      for (int64_t t = t0; t < t1; ++t) kernels::conv_gemm_task(s, gemm_, w_rows, p, t, x, y, slot, lo, hi);
    }
  });
}

}  // namespace cpu_dense
}  // namespace minnow
