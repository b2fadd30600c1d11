#include "conv_pool.h"

#include <algorithm>
#include <cstring>

namespace minnow {
namespace cpu_dense {

namespace {

// A band's conv rows, all channels, at most this many bytes (at least one pool row's
// worth): it stays in L2 (2 MB a core on the Xeon) between the conv writing it and the
// pool reading it. squeezenet1_1's first conv + pool (Xeon, per-node medians of 8
// alternating `--profile` runs at 2 threads): bands of 1 MB 0.975x the time of 512 KB
// (3 % of the conv rows computed twice instead of 6 %); with 2 MB bands the pair took
// 1.06x the unfused pair's time at 1 thread.
constexpr int64_t kBandBytes = 1024 * 1024;
constexpr int64_t kLineFloats = 16;  // the pieces of a slot start on cache lines

int64_t round_line(int64_t floats) { return (floats + kLineFloats - 1) / kLineFloats * kLineFloats; }

// s restricted to its output rows [r0, r1): one image, the input rows those windows read
// (from *first_in on), the padding before them what is left of s's.
kernels::ConvShape row_band(const kernels::ConvShape& s, int64_t r0, int64_t r1, int64_t* first_in) {
  kernels::ConvShape b = s;
  b.N = 1;
  const int64_t start = r0 * s.s[1] - s.pb[1];
  const int64_t end = (r1 - 1) * s.s[1] - s.pb[1] + (s.k[1] - 1) * s.d[1] + 1;
  const int64_t lo = std::max<int64_t>(0, start), hi = std::min(s.in[1], end);
  b.in[1] = hi - lo;
  b.out[1] = r1 - r0;
  b.pb[1] = lo - start;
  *first_in = lo;
  return b;
}

// Every window along the rows reads at least one input row (the padding on either side is
// narrower than a window): then every band has input rows.
bool rows_padding_sane(const kernels::ConvShape& s) {
  const int64_t span = (s.k[1] - 1) * s.d[1];
  const int64_t after = (s.out[1] - 1) * s.s[1] - s.pb[1] + span + 1 - s.in[1];
  return s.pb[1] <= span && after <= span;
}

bool two_d(const kernels::ConvShape& s) { return s.k[0] == 1 && s.in[0] == 1 && s.out[0] == 1; }

// Workers (parts of the pool's rows per image) on `threads` threads.
int64_t parts_for(const kernels::ConvShape& ps, int threads) {
  return std::max<int64_t>(1, std::min<int64_t>(std::min<int64_t>(threads, kernels::kConvMaxSlots), ps.out[1]));
}

// The pool rows of a band: as many as keep its conv rows within kBandBytes.
int64_t band_pool_rows(const kernels::ConvShape& cs, const kernels::ConvShape& ps) {
  const int64_t row_bytes = cs.M * cs.out[2] * int64_t(sizeof(float));
  const int64_t conv_rows = std::max<int64_t>(1, kBandBytes / std::max<int64_t>(1, row_bytes));
  const int64_t window = (ps.k[1] - 1) * ps.d[1] + 1;
  return std::max<int64_t>(1, (conv_rows - window) / ps.s[1] + 1);
}

// fn(a, b) for the bands [a, b) of pool rows [r0, r1), of about equal size.
template <class F>
void for_bands(int64_t r0, int64_t r1, int64_t band_rows, F fn) {
  const int64_t rows = r1 - r0;
  if (rows <= 0) return;
  const int64_t bands = (rows + band_rows - 1) / band_rows;
  for (int64_t i = 0; i < bands; ++i) fn(r0 + rows * i / bands, r0 + rows * (i + 1) / bands);
}

// The band shapes of pool rows [a, b): the pool's over conv rows from *c0 on, the conv's
// over input rows from *ih0 on.
void band_shapes(const ConvPoolPlan& p, int64_t a, int64_t b, kernels::ConvShape* pool, kernels::ConvShape* conv,
                 int64_t* c0, int64_t* ih0) {
  *pool = row_band(p.pool, a, b, c0);
  *conv = row_band(p.conv, *c0, *c0 + pool->in[1], ih0);
}

// Parts of the pool's rows per image on `threads` threads, each with a slot of its own.
int64_t slotted_parts(const ConvPoolPlan& p, int threads) {
  return run_slots(threads, parts_for(p.pool, threads), p.slot_floats());
}

// First convs with the output channels as lanes (kernels/conv_hwc.h): 1-4 input channels,
// output channels in whole pairs of vectors, a pool without dilation.
bool hwc_applies(const kernels::ConvShape& cs, const kernels::ConvShape& ps) {
  const int64_t L = kernels::conv_hwc_lanes();
  return cs.C <= 4 && cs.group == 1 && L > 1 && cs.M % (2 * L) == 0 && ps.d[1] == 1 && ps.d[2] == 1;
}

// Input rows (axis 1) or columns (axis 2), padding included, that `out` outputs of cs read.
int64_t window_span(const kernels::ConvShape& cs, int axis, int64_t out) {
  return (out - 1) * cs.s[axis] + (cs.k[axis] - 1) * cs.d[axis] + 1;
}

// The channels-as-lanes pair's geometry (all but the conv's bias and clamp, read at run:
// a Relu may be fused into the conv after the pool takes it).
kernels::HwcConv hwc_conv_geometry(const kernels::ConvShape& cs) {
  kernels::HwcConv g;
  g.C = cs.C;
  g.M = cs.M;
  g.KH = cs.k[1];
  g.KW = cs.k[2];
  g.sh = cs.s[1];
  g.sw = cs.s[2];
  g.dh = cs.d[1];
  g.dw = cs.d[2];
  // A padded input row: every column a window reads, the padding before the input too.
  g.wp = std::max(cs.in[2] + cs.pb[2], window_span(cs, 2, cs.out[2]));
  g.OW = cs.out[2];
  return g;
}
kernels::HwcPool hwc_pool_geometry(const kernels::ConvShape& cs, const kernels::ConvShape& ps) {
  kernels::HwcPool g;
  g.M = cs.M;
  g.IH = cs.out[1];
  g.IW = cs.out[2];
  g.KH = ps.k[1];
  g.KW = ps.k[2];
  g.sh = ps.s[1];
  g.sw = ps.s[2];
  g.ph = ps.pb[1];
  g.pw = ps.pb[2];
  g.PH = ps.out[1];
  g.PW = ps.out[2];
  return g;
}

}  // namespace

bool conv_pool_plan(const ConvPacked& conv, const kernels::ConvShape& cs, const kernels::ConvShape& ps,
                    ConvPoolPlan* plan, const float* w) {
  if (!(conv.runs_rows() && cs.group == 1 && two_d(cs) && two_d(ps) && ps.N == cs.N && ps.C == cs.M &&
        ps.in[1] == cs.out[1] && ps.in[2] == cs.out[2] && ps.s[1] >= 2 && rows_padding_sane(cs) &&
        rows_padding_sane(ps) && cs.M * cs.P() * int64_t(sizeof(float)) >= kConvPoolMinBytes))
    return false;
  ConvPoolPlan p;
  p.conv = cs;
  p.pool = ps;
  p.band_rows = band_pool_rows(cs, ps);
  int64_t hwc_rows = 0;  // the most padded input rows a band of the channels-as-lanes conv reads
  // The parts' rows come from RunContext::parallel_parts (sized by the threads' speeds),
  // so a band may be any run of up to band_rows pool rows: the slot holds the largest
  // band at every start row (a band's rows only grow with its end).
  const int64_t PH = ps.out[1];
  for (int64_t a = 0; a < PH; ++a) {
    kernels::ConvShape pb, cb;
    int64_t c0 = 0, ih0 = 0;
    band_shapes(p, a, std::min(PH, a + p.band_rows), &pb, &cb, &c0, &ih0);
    p.in = std::max(p.in, round_line(cb.C * cb.Pin()));
    p.conv_out = std::max(p.conv_out, round_line(cb.M * cb.P()));
    p.conv_scratch = std::max(p.conv_scratch, round_line(conv.rows_scratch_floats(cb)));
    p.pool_scratch = std::max(p.pool_scratch, round_line(kernels::dwconv_slot_floats(pb)));
    hwc_rows = std::max(hwc_rows, window_span(cs, 1, cb.out[1]));
  }
  if (w && hwc_applies(cs, ps)) {
    // W [M][C][kh][kw] -> [C][kh][kw][M]; the band's padded input (its rows, every column
    // a window reads), its conv rows (pixel-major, as many floats as planes), a row of
    // pool outputs before they go to the planes.
    const int64_t M = cs.M, K = cs.K();
    kernels::FloatBuf wt = kernels::alloc_floats(size_t(M * K));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) wt[size_t(k * M + m)] = w[m * K + k];
    p.hwc_w = std::shared_ptr<const float>(wt.release(), kernels::AlignedFree());
    p.hwc_conv = hwc_conv_geometry(cs);
    p.hwc_pool = hwc_pool_geometry(cs, ps);
    p.in = round_line(cs.C * hwc_rows * p.hwc_conv.wp);
    p.conv_scratch = 0;
    p.pool_scratch = round_line(ps.out[2] * M);
  }
  *plan = std::move(p);
  return true;
}

size_t conv_pool_scratch_bytes(const ConvPoolPlan& plan, int threads) {
  // One image at a time, each part of its rows in a slot of its own (conv_pool_run).
  if (threads > 0) return size_t(SlotLayout::floats_for(threads, slotted_parts(plan, threads), plan.slot_floats())) * sizeof(float);
  size_t most = 0;  // any count: the most any number of parts asks
  for (int64_t parts = 1; parts <= parts_for(plan.pool, kernels::kConvMaxSlots); ++parts)
    most = std::max(most, run_in_slots_bytes(0, parts, plan.slot_floats()));
  return most;
}

// fn(n, a, b, slot) for each band [a, b) of the pool's rows of each image n, image by
// image, the rows in parts sized by the threads' speeds, a slot a part (run_parts_in_slots).
template <class F>
static void for_each_band(const RunContext& ctx, const ConvPoolPlan& plan, F fn) {
  const int64_t parts = slotted_parts(plan, ctx.num_threads());
  for (int64_t n = 0; n < plan.conv.N; ++n)
    run_parts_in_slots(
        ctx, plan.pool.out[1], parts, plan.slot_floats(), "conv + maxpool",
        [&](int64_t r0, int64_t r1, float* slot) {
          for_bands(r0, r1, plan.band_rows, [&](int64_t a, int64_t b) { fn(n, a, b, slot); });
        },
        int64_t(ctx.scratch_size() / sizeof(float)));
}

// The channels-as-lanes run (ConvPoolPlan::hwc_w): per band, its input rows zero-padded,
// its conv rows pixel-major, then its pool rows into the output planes.
static void conv_pool_run_hwc(const RunContext& ctx, const ConvPacked& conv, const ConvPoolPlan& plan,
                              const float* x, float* y) {
  const kernels::ConvShape& cs = plan.conv;
  const int64_t H = cs.in[1], W = cs.in[2], C = cs.C;
  const int64_t wp = plan.hwc_conv.wp, pl = cs.pb[2];
  kernels::HwcConv g = plan.hwc_conv;
  g.bias = conv.bias();
  g.lo = conv.clamp_lo();
  g.hi = conv.clamp_hi();
  for_each_band(ctx, plan, [&](int64_t n, int64_t a, int64_t b, float* slot) {
    float* in = slot;
    float* conv_out = in + plan.in;
    float* pool_tmp = conv_out + plan.conv_out;
    kernels::ConvShape pb, cb;
    int64_t c0 = 0, ih0 = 0;
    band_shapes(plan, a, b, &pb, &cb, &c0, &ih0);
    // Padded row j of the band: input row c0 * sh - pad + j (zeros off the input).
    const int64_t rows = window_span(cs, 1, cb.out[1]);
    const int64_t first = c0 * cs.s[1] - cs.pb[1];
    kernels::HwcConv gb = g;
    gb.hp = rows;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t j = 0; j < rows; ++j) {
        float* dst = in + (c * rows + j) * wp;
        const int64_t ih = first + j;
        if (ih < 0 || ih >= H) {
          std::fill(dst, dst + wp, 0.0f);
          continue;
        }
        std::fill(dst, dst + pl, 0.0f);
        std::memcpy(dst + pl, x + ((n * C + c) * H + ih) * W, size_t(W) * sizeof(float));
        std::fill(dst + pl + W, dst + wp, 0.0f);
      }
    const bool nan = kernels::conv_hwc_rows(gb, in, plan.hwc_w.get(), 0, cb.out[1], conv_out);
    kernels::HwcPool band = plan.hwc_pool;
    band.row0 = c0;
    kernels::maxpool_hwc_to_planes(band, conv_out, a, b, y + n * cs.M * band.PH * band.PW, pool_tmp, nan);
  });
}

void conv_pool_run(const RunContext& ctx, const ConvPacked& conv, const ConvPoolPlan& plan, const float* x,
                   const float* w_rows, float* y) {
  const kernels::ConvShape& cs = plan.conv;
  const int64_t PH = plan.pool.out[1], PW = plan.pool.out[2], W = cs.in[2];
  if (plan.hwc_w) return conv_pool_run_hwc(ctx, conv, plan, x, y);
  for_each_band(ctx, plan, [&](int64_t n, int64_t a, int64_t b, float* slot) {
    float* in = slot;
    float* conv_out = in + plan.in;
    float* conv_scratch = conv_out + plan.conv_out;
    float* pool_scratch = conv_scratch + plan.conv_scratch;
    kernels::ConvShape pb, cb;
    int64_t c0 = 0, ih0 = 0;
    band_shapes(plan, a, b, &pb, &cb, &c0, &ih0);
    // The band's input rows, channel by channel (the conv kernels take whole planes).
    for (int64_t c = 0; c < cs.C; ++c)
      std::memcpy(in + c * cb.Pin(), x + ((n * cs.C + c) * cs.in[1] + ih0) * W, size_t(cb.Pin()) * sizeof(float));
    conv.run_rows(cb, in, w_rows, conv_out, conv_scratch, plan.conv_scratch);
    for (int64_t m = 0; m < cs.M; ++m)
      kernels::maxpool_plane(pb, 0, conv_out + m * cb.P(), y + ((n * cs.M + m) * PH + a) * PW, pool_scratch);
  });
}

}  // namespace cpu_dense
}  // namespace minnow
