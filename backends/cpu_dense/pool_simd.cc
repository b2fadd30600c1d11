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
// Channel-blocked wherever it applies. On the Xeon (AVX-512, 1 thread, `minnow bench
// --profile`) squeezenet1_1's 64 x 55x55, 128 x 27x27 and 256 x 13x13 pools 0.47 / 0.29 /
// 0.20 -> 0.32 / 0.13 / 0.06 ms, resnet18's 64 x 112 -> 56 0.60-0.66 -> 0.41-0.42 ms. On
// the Zen 3 (AVX2) the blocks' gathers were slower than planes at 55x55 and 112x112 until
// they became register transposes (41 alternating runs, plane / block: 467 / 304,
// 361 / 126, 253 / 63 us for squeezenet's three pools, 487 / 303 us for resnet's).
// Stride-2 pools without left padding whose output rows hold a vector take planes
// (maxpool_plane reads the input rows directly, de-interleaving pairs of vectors; no
// transposes): squeezenet1_1's 64 x 111 -> 55 pool 0.276 -> 0.231-0.246 ms, 128 x 55 ->
// 27 0.129 -> 0.122 (Xeon, minimum of 200 runs in the model, three alternating
// processes). With a padded border its per-element edge columns made resnet's 112 -> 56
// pool slower (0.30 -> 0.33 ms): blocks there.
// With AVX2's 8-lane transposes the blocks win again on narrower outputs (Zen 3, one pool,
// input just written, 41 alternating runs, block / plane: 128 x 55 -> 27 180 / 227 us,
// 256 x 27 -> 13 80 / 119 us; 64 x 111 -> 55 387 / 337 us): planes from 4 vectors wide.
bool use_block(const kernels::ConvShape& s) {
  const int64_t L = kernels::dwconv_block_lanes();
  if (kernels::maxpool_plane_reads_rows(s) && (L != 8 || s.out[2] >= 4 * L)) return false;
  return kernels::maxpool_block_applies(s);
}
}  // namespace

size_t maxpool_simd_scratch(const kernels::ConvShape& s) {
  if (use_block(s))
    return size_t(max_scratch_slots(s.N * s.C / kernels::dwconv_block_lanes(), kernels::dwconv_block_slot_floats(s))) *
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
