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
// Channel-blocked wherever it applies but for the stride-2 rows below. On the Xeon
// (AVX-512, 1 thread, `minnow bench --profile`) squeezenet1_1's 64 x 55x55, 128 x 27x27
// and 256 x 13x13 pools 0.47 / 0.29 / 0.20 -> 0.32 / 0.13 / 0.06 ms, resnet18's 64 x 112
// -> 56 0.60-0.66 -> 0.41-0.42 ms. On
// the Zen 3 (AVX2) the blocks' gathers were slower than planes at 55x55 and 112x112 until
// they became register transposes (41 alternating runs, plane / block: 467 / 304,
// 361 / 126, 253 / 63 us for squeezenet's three pools, 487 / 303 us for resnet's).
// Stride-2 pools with up to 3 taps a row whose output rows hold a vector of at most 8
// floats take planes (maxpool_plane reads the input rows directly: a column pass into a
// row buffer, then each window's columns, no transposes): Zen 4, one pool, input just
// written, 61 alternating runs, plane / block: squeezenet1_1's 64 x 111 -> 55 200 / 365 us,
// 128 x 55 -> 27 67 / 134, 256 x 27 -> 13 52 / 83, resnet's 64 x 112 -> 56 (a padded
// border) 243 / 377 us; with AVX2 forced on the same machine 0.55-0.7x too. (Before the
// row buffer the plane kernel loaded each row's floats twice per output row, with 16-lane
// vectors each straddling two cache lines, and per-element edges: 1.3-1.37x the time.)
bool use_block(const kernels::ConvShape& s) {
  return !kernels::maxpool_plane_reads_rows(s) && kernels::maxpool_block_applies(s);
}
}  // namespace

size_t maxpool_simd_scratch(const kernels::ConvShape& s, int threads) {
  if (use_block(s))
    return run_in_slots_bytes(threads, s.N * s.C / kernels::dwconv_block_lanes(), kernels::dwconv_block_slot_floats(s));
  return run_in_slots_bytes(threads, s.N * s.C, kernels::dwconv_slot_floats(s));
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
