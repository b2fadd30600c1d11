#include "pool_simd.h"

namespace minnow {
namespace cpu_dense {

bool maxpool_simd_shape(const Axis ax[kMaxSpatial], int64_t N, int64_t C, kernels::ConvShape* s) {
  if (ax[0].k != 1 || ax[0].in != 1 || ax[0].out != 1) return false;
  s->N = N;
  s->C = s->M = s->group = C;
  for (int i = 0; i < kMaxSpatial; ++i) {
    s->in[i] = ax[i].in;
    s->out[i] = ax[i].out;
    s->k[i] = ax[i].k;
    s->s[i] = ax[i].s;
    s->d[i] = ax[i].d;
    s->pb[i] = ax[i].pb;
  }
  return true;
}

size_t maxpool_simd_scratch(const kernels::ConvShape& s) {
  return size_t(std::min<int64_t>(s.N * s.C, kernels::kConvMaxSlots)) *
         size_t(kernels::dwconv_slot_floats(s)) * sizeof(float);
}

void maxpool_simd_run(const RunContext& ctx, const kernels::ConvShape& s, const float* x, float* y) {
  const int64_t planes = s.N * s.C, slot_floats = kernels::dwconv_slot_floats(s);
  const int64_t slots = ctx.num_threads() <= 1
                            ? 1
                            : std::max<int64_t>(1, std::min<int64_t>({planes, kernels::kConvMaxSlots,
                                                                      4 * ctx.num_threads()}));
  if (ctx.scratch_size() < size_t(slots * slot_floats) * sizeof(float))
    throw PluginError("maxpool: scratch too small");
  float* scratch = static_cast<float*>(ctx.scratch());
  ctx.parallel_for(size_t(slots), 1, [&](size_t s0, size_t s1) {
    for (size_t sl = s0; sl < s1; ++sl) {
      float* slot = scratch + int64_t(sl) * slot_floats;
      const int64_t p0 = planes * int64_t(sl) / slots, p1 = planes * int64_t(sl + 1) / slots;
      for (int64_t p = p0; p < p1; ++p) kernels::maxpool_plane(s, p, x, y, slot);
    }
  });
}

}  // namespace cpu_dense
}  // namespace minnow
