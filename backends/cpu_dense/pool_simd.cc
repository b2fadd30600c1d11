#include "pool_simd.h"

#include "conv_packed.h"

namespace minnow {
namespace cpu_dense {

bool maxpool_simd_shape(const Axis ax[kMaxSpatial], int64_t N, int64_t C, kernels::ConvShape* s) {
  if (ax[0].k != 1 || ax[0].in != 1 || ax[0].out != 1) return false;
  *s = conv_shape(ax, N, C, C, C);
  return true;
}

namespace {
// Channel-blocked for output planes narrower than two vectors (as the depthwise
// convolution), planes otherwise. On the Xeon (AVX-512, 1 thread, `minnow bench
// --profile`) blocks beat the old plane kernel everywhere: squeezenet1_1's 64 x 55x55,
// 128 x 27x27 and 256 x 13x13 pools 0.47 / 0.29 / 0.20 -> 0.32 / 0.13 / 0.06 ms. The plane
// kernel then got a NaN-free fast path (plain Max, four vectors at a time, no divisions):
// on the Zen 3 (AVX2, 41 alternating runs) planes 806 / 459 / 271 -> 519 / 269 / 195 us
// against blocks 674 / 291 / 141 us (its gathers are slow), and resnet's 64 x 112 -> 56
// 786 -> 410 us against 624. Not re-measured on the Xeon since.
bool use_block(const kernels::ConvShape& s) {
  return kernels::maxpool_block_applies(s) && s.out[2] < 2 * kernels::dwconv_block_lanes();
}
}  // namespace

size_t maxpool_simd_scratch(const kernels::ConvShape& s) {
  if (use_block(s))
    return size_t(std::min<int64_t>(s.N * s.C / kernels::dwconv_block_lanes(), kernels::kConvMaxSlots)) *
           size_t(kernels::dwconv_block_slot_floats(s)) * sizeof(float);
  return size_t(std::min<int64_t>(s.N * s.C, kernels::kConvMaxSlots)) *
         size_t(kernels::dwconv_slot_floats(s)) * sizeof(float);
}

void maxpool_simd_run(const RunContext& ctx, const kernels::ConvShape& s, const float* x, float* y) {
  if (use_block(s))
    return run_in_slots(ctx, s.N * s.C / kernels::dwconv_block_lanes(), kernels::dwconv_block_slot_floats(s),
                        "maxpool", [&](int64_t b, float* slot) { kernels::maxpool_block(s, b, x, y, slot); });
  run_in_slots(ctx, s.N * s.C, kernels::dwconv_slot_floats(s), "maxpool",
               [&](int64_t p, float* slot) { kernels::maxpool_plane(s, p, x, y, slot); });
}

}  // namespace cpu_dense
}  // namespace minnow
