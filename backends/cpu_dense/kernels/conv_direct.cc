// Direct convolution on few input channels (kernels/conv.h): plan, tap offsets and the
// tiles; the phase planes are built in f32_phase_hwy.cc.
#include <algorithm>

#include "kernels/conv.h"

namespace minnow {
namespace cpu_dense {
namespace kernels {

bool conv_direct_applies(const ConvShape& s) {
  const int64_t nr = gemm_nr();
  // Taps per input float (taps / stride^2) at least 6: what the im2col copy replicates. On
  // the Zen 4 (one layer, 21-41 alternating runs, direct / im2col): 7x7 stride 2 0.78x,
  // 5x5 stride 2 0.71x, 3x3 stride 1 0.77-0.89x, but 3x3 stride 2 (2.25 taps a float:
  // squeezenet1_1's and mobilenet_v2's first convs) 1.0-1.1x, the planes costing as much
  // as the copy they save.
  return conv_direct_weights_fit(s.group, s.Cg(), s.taps(), s.s[1] * s.s[2]) && s.k[0] == 1 && s.in[0] == 1 &&
         s.out[0] == 1 && s.d[1] == 1 && s.d[2] == 1 && s.s[1] == s.s[2] && (s.s[1] == 1 || s.s[1] == 2) &&
         s.out[2] >= nr;
}

DirectConvPlan plan_direct_conv(const ConvShape& s, int threads) {
  DirectConvPlan p;
  const int64_t st = s.s[1];
  p.stride = st;
  p.hh = s.out[1] + (s.k[1] - 1) / st;
  p.wh = s.out[2] + (s.k[2] - 1) / st;
  // A tile's loads reach at most NR - 1 floats past its row's last output, plus the widest
  // tap's column: past the plane's end on its last row (read, never stored).
  const int64_t slack = gemm_nr() + (s.k[2] - 1) / st;
  p.plane_floats = (p.hh * p.wh + slack + 15) / 16 * 16;
  p.planes_floats = s.C * st * st * p.plane_floats;
  // Rows per task: about 8 tasks per worker (a parallel_for balances about that well).
  const int64_t oh = s.out[1];
  p.rows_per_task = std::max<int64_t>(1, oh / (8 * std::max(1, threads)));
  p.tasks = (oh + p.rows_per_task - 1) / p.rows_per_task;
  return p;
}

void direct_conv_offsets(const ConvShape& s, const DirectConvPlan& p, int32_t* off) {
  const int64_t st = p.stride, KH = s.k[1], KW = s.k[2];
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int64_t plane = (c * st + kh % st) * st + kw % st;
        off[(c * KH + kh) * KW + kw] = static_cast<int32_t>(plane * p.plane_floats + (kh / st) * p.wh + kw / st);
      }
}

void direct_conv_task(const ConvShape& s, const ConvWeights& w, const float* w_rows, const DirectConvPlan& p,
                      int64_t t, const float* planes, const int32_t* off, float* y, float lo, float hi,
                      const float* addend) {
  const int64_t nr = gemm_nr(), K = s.K(), M = s.M, P = s.P(), OW = s.out[2];
  const int64_t oh0 = t * p.rows_per_task, oh1 = std::min(s.out[1], oh0 + p.rows_per_task);
  const TileIndirectFn tile_fn = gemm_tile_indirect_fn();
  Tile tile;
  tile.K = K;
  tile.a_rs = w.in_place ? K : 1;
  tile.a_cs = w.in_place ? 1 : kGemmMR;
  tile.ldb = 0;
  tile.ldc = P;
  Epilogue e;
  e.bias_per_row = true;
  e.lo = lo;
  e.hi = hi;
  // Row panels of W outer: each writes its six output channels along the task's rows, six
  // write streams the prefetchers follow (per strip, every panel in turn wrote 2 lines in
  // each of M planes: 1.9x the time on squeezenet1_1's first conv). The task's B (K rows of
  // a few output rows in the planes) stays in L1 / L2 for the next panel.
  for (int64_t i0 = 0; i0 < M; i0 += kGemmMR) {
    tile.mr = static_cast<int>(std::min<int64_t>(kGemmMR, M - i0));
    tile.a = w.in_place ? w_rows + i0 * K : w.groups[0].data.get() + i0 * K;
    e.bias = w.bias ? w.bias.get() + i0 : nullptr;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = 0; ow < OW; ow += nr) {
        tile.b = planes + oh * p.wh + ow;
        tile.nr = static_cast<int>(std::min(nr, OW - ow));
        tile.c = y + i0 * P + oh * OW + ow;
        e.addend = addend ? addend + i0 * P + oh * OW + ow : nullptr;
        tile_fn(tile, off, e);
      }
  }
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
