// Winograd F(2x2, 3x3) convolution: see kernels/winograd.h.
//
// Transforms (F(2,3), Lavin & Gray):
//   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]          U = G g G^T   (4x4 from 3x3)
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]           V = B^T d B   (4x4 from 4x4)
//   A^T = [1 1 1 0; 0 1 -1 -1]                              Y = A^T M A   (2x2 from 4x4)
// F(4,3) at the points 0, 1, -1, 1/2, -2, infinity (winograd.h):
//   G = [1 0 0; 1/3 1/3 1/3; -1/3 1/3 -1/3; -16/15 -8/15 -4/15; 1/15 -2/15 4/15; 0 0 1]
//   B^T = [1 -3/2 -2 3/2 1 0; 0 -1 1/2 5/2 1 0; 0 1 -5/2 1/2 1 0; 0 -2 -1 2 1 0;
//          0 1/2 -1 -1/2 1 0; 0 1 -3/2 -2 3/2 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 1/2 -2 0; 0 1 1 1/4 4 0; 0 1 -1 1/8 -8 1]
// The input and output transforms (f32_winograd_hwy.cc) run along the tiles of a block.
#include "kernels/winograd.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace minnow {
namespace cpu_dense {
namespace kernels {

bool winograd_applies(const ConvShape& s) {
  return s.group == 1 && s.k[0] == 1 && s.in[0] == 1 && s.out[0] == 1 && s.k[1] == 3 &&
         s.k[2] == 3 && s.s[1] == 1 && s.s[2] == 1 && s.d[1] == 1 && s.d[2] == 1;
}

namespace {
// One row i of G g (t0..t2: its three columns, C floats each) times G^T into the four
// matrices 4 i .. 4 i + 3. A function of its own with __restrict parameters so that the
// compiler vectorises it: inline, with the rows from one buffer, it could not rule out
// aliasing and stored a float at a time.
void winograd_u_rows(const float* __restrict t0, const float* __restrict t1, const float* __restrict t2,
                     float* __restrict o0, float* __restrict o1, float* __restrict o2, float* __restrict o3,
                     int64_t C) {
  for (int64_t c = 0; c < C; ++c) {
    o0[c] = t0[c];
    o1[c] = 0.5f * (t0[c] + t1[c] + t2[c]);
    o2[c] = 0.5f * (t0[c] - t1[c] + t2[c]);
    o3[c] = t2[c];
  }
}
}  // namespace

namespace {
// F(4,3)'s U = G g G^T, in double (its thirds and fifteenths are not exact in float), as
// pack_winograd's F(2,3) part: G g for every c in gg, then each row i times G^T into the
// six matrices 6 i .. 6 i + 5, unit-stride rows of C that the compiler vectorises.
constexpr double kG4[6][3] = {{1, 0, 0},
                              {1.0 / 3, 1.0 / 3, 1.0 / 3},
                              {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                              {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                              {1.0 / 15, -2.0 / 15, 4.0 / 15},
                              {0, 0, 1}};
void winograd_u_row4(const double* __restrict t0, const double* __restrict t1, const double* __restrict t2,
                     float* __restrict o, int64_t plane, int64_t C) {
  for (int j = 0; j < 6; ++j) {
    const double g0 = kG4[j][0], g1 = kG4[j][1], g2 = kG4[j][2];
    float* __restrict oj = o + j * plane;
    for (int64_t c = 0; c < C; ++c) oj[c] = static_cast<float>(g0 * t0[c] + g1 * t1[c] + g2 * t2[c]);
  }
}
void pack_u4(const float* w, int64_t M, int64_t C, float* u) {
  const int64_t plane = M * C;
  std::vector<double> gg(size_t(18 * C));
  auto row = [&](int i, int j) { return gg.data() + (3 * i + j) * C; };
  for (int64_t m = 0; m < M; ++m) {
    const float* wm = w + m * C * 9;
    for (int64_t c = 0; c < C; ++c) {
      const float* g = wm + c * 9;
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 3; ++j) row(i, j)[c] = kG4[i][0] * g[j] + kG4[i][1] * g[3 + j] + kG4[i][2] * g[6 + j];
    }
    for (int i = 0; i < 6; ++i) winograd_u_row4(row(i, 0), row(i, 1), row(i, 2), u + m * C + 6 * i * plane, plane, C);
  }
}
}  // namespace

WinogradWeights pack_winograd(const float* w, int64_t M, int64_t C, const float* bias, int tile) {
  WinogradWeights ww;
  ww.m = tile == 4 ? 4 : 2;
  ww.M = M;
  ww.C = C;
  const int64_t n = ww.m + 2;
  ww.u = alloc_floats(size_t(n * n * M * C), false);
  if (bias) {
    ww.bias = alloc_floats(size_t(M), false);
    std::memcpy(ww.bias.get(), bias, size_t(M) * sizeof(float));
  }
  if (ww.m == 4) {
    pack_u4(w, M, C, ww.u.get());
    return ww;
  }
  // Per output channel m, two passes along the input channels c: G g for every c into
  // gg[i][j][c] (4 x 3 rows of C floats; each c's 9 weights read together, so this pass
  // stays scalar), then (G g) G^T into the 16 matrices, one contiguous row of C floats each,
  // unit-stride loads and stores that winograd_u_rows vectorises. (One (m, c) at a time,
  // 16 scattered stores each, took 3.6 ms for 256 x 256 channels; resnet50's prepare has
  // six such layers.) Float arithmetic: the halvings are exact, the sums round once.
  float* u = ww.u.get();
  const int64_t plane = M * C;
  std::vector<float> gg(size_t(12 * C));
  auto row = [&](int i, int j) { return gg.data() + (3 * i + j) * C; };
  for (int64_t m = 0; m < M; ++m) {
    const float* wm = w + m * C * 9;
    for (int64_t c = 0; c < C; ++c) {
      const float* g = wm + c * 9;
      for (int j = 0; j < 3; ++j) {
        row(0, j)[c] = g[j];
        row(1, j)[c] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        row(2, j)[c] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        row(3, j)[c] = g[6 + j];
      }
    }
    float* o = u + m * C;
    for (int i = 0; i < 4; ++i)
      winograd_u_rows(row(i, 0), row(i, 1), row(i, 2), o + (4 * i + 0) * plane, o + (4 * i + 1) * plane,
                      o + (4 * i + 2) * plane, o + (4 * i + 3) * plane, C);
  }
  return ww;
}

namespace {
constexpr int64_t kMaxKC = 256;  // as the im2col GEMM: a 6 x KC panel of U stays in L1
// Bytes of one block's V and M matrices (16 x nt x (C + M) floats), and the most panels
// of tiles per block: about half of a 512 KB L2, so the input transform's V is still
// there when the GEMMs read it. More tiles per block would reuse each U_xi over more
// columns, which only the deep layers need (they stream all of U once per block). Measured
// on Zen 3, same process against the GEMM: 64 channels 56x56 1.71-1.77x at 256 KB,
// 1.67-1.70x at 512 KB, 1.48-1.58x at 1 MB; 128 channels 28x28 1.46-1.68x, 1.56-1.62x,
// 1.29-1.38x. (56x56 / 28x28 layers with twice the panels: 1.06-1.16x on Zen 4.) Small
// maps: one block, plan_winograd.
constexpr int64_t kBlockBytes = 256 * 1024;
// Input channels (tile K) from which a one-block plan's tiles prefetch U's next row panel
// (winograd_block_rows). In-process A/B (bench/inproc_ab.sh, 20-40 blocks of 10 runs, per-
// node medians): squeezenet1_1's 64 -> 256 13x13 layers 0.89-0.90x the time, the model
// 0.987x at 1 thread and 2; resnet50's 256-channel 14x14 layers 0.96-0.98x at 1 and 2
// threads. Its 48 -> 192 13x13 layers with prefetches from K = 32: unchanged.
constexpr int64_t kPrefetchUMinK = 64;
constexpr int64_t kMaxBlockPanels = 16;
// Tiles in the last panel (1..NR) of a block of `count` tiles.
int64_t last_panel_tiles(int64_t count, int64_t nr) { return count - (count - 1) / nr * nr; }
}  // namespace

WinogradPlan plan_winograd(const ConvShape& s, int tile) {
  WinogradPlan p;
  p.m = tile == 4 ? 4 : 2;
  p.n = p.m + 2;
  p.nn = p.n * p.n;
  const int64_t nr = gemm_nr();
  p.tiles_h = (s.out[1] + p.m - 1) / p.m;
  p.tiles_w = (s.out[2] + p.m - 1) / p.m;
  p.tiles = p.tiles_h * p.tiles_w;
  p.hp = p.m * p.tiles_h + 2;
  p.wp = p.m * (p.tiles_w + 1);
  const int64_t per_tile = p.nn * (s.C + s.M) * int64_t(sizeof(float));
  const int64_t panels = std::max<int64_t>(1, std::min(kMaxBlockPanels, kBlockBytes / (per_tile * nr)));
  p.nt = std::min(panels, (p.tiles + nr - 1) / nr) * nr;
  // Maps of at most two panels of tiles (13x13, 14x14: 49 tiles at NR 32) in one block
  // whatever its size: each block streams all of U (4 MB at 256 channels, from memory in
  // a model), and with several workers they share the block by output channels
  // (ConvPacked::run_winograd) instead of one taking 32 tiles and the other 17. Zen 4,
  // per-node minimums of 6-8 alternating profiles: resnet18's 14x14 layers 0.86-0.90x the
  // time at 1 thread, 0.92-0.93x at 2, resnet50's 0.90-0.96x / 0.91-0.98x, squeezenet1_1's
  // 13x13 layers 0.89-0.93x at 2 threads, unchanged at 1.
  if (p.tiles <= 2 * nr) p.nt = (p.tiles + nr - 1) / nr * nr;
  // One block: its M is shared by the workers by output channels (ConvPacked::run_winograd),
  // so leave room after the last tile for the output transform's widest group, which
  // loads kOutputGroupLanes lanes from a group's first tile: reading the end of the last
  // row of one worker's channels must not touch the first row of the next worker's, which
  // it may be writing at that moment (ThreadSanitizer, executor_test: the extra lanes
  // were discarded, but the read raced). With several blocks each worker has its own M.
  if (p.tiles <= p.nt && p.tiles + kOutputGroupLanes - 1 > p.nt) p.nt += nr;
  p.blocks = (p.tiles + p.nt - 1) / p.nt;
  const int64_t kchunks = (s.C + kMaxKC - 1) / kMaxKC;
  p.kc = (s.C + kchunks - 1) / kchunks;
  // wp = m (tiles_w + 1): m phases of columns; then slack for the input transform's
  // whole-vector loads of a group's last run of tiles (f32_winograd_hwy.cc: InputImpl).
  p.pad_floats = s.C * p.hp * p.wp + kWinogradInputSlackFloats;
  // V [nn][nt / nr][C][nr] and the last block's dot columns' transposed V (nn x dots x C;
  // block_view; the other blocks' panels are whole): the input part; then M [nn][M][nt].
  // The map's last block starts at a multiple of nt, or of winograd_run_align() where
  // workers take runs of tiles: room for the most dot columns any such start leaves.
  int64_t dots = 0;
  const int64_t align = winograd_run_align();
  for (int64_t t0 = std::max<int64_t>(0, p.tiles - p.nt) / align * align; t0 < p.tiles; t0 += align)
    if (p.tiles - t0 <= p.nt) dots = std::max(dots, gemm_half_tail_dots(last_panel_tiles(p.tiles - t0, nr), nr));
  p.in_floats = p.nn * winograd_stride(p.nt * s.C) + p.nn * dots * s.C;
  p.m_floats = p.nn * winograd_stride(s.M * p.nt);
  p.slot_floats = p.in_floats + p.m_floats;
  return p;
}

int64_t winograd_run_align() { return gemm_nr() / 2; }

void winograd_tiles_rows(const WinogradPlan& p, int64_t t0, int64_t t1, int64_t* r0, int64_t* r1) {
  *r0 = p.m * (t0 / p.tiles_w);
  *r1 = std::min(p.hp, p.m * ((std::min(t1, p.tiles) - 1) / p.tiles_w) + p.n);
}

WinogradPlan winograd_worker_rows(const WinogradPlan& p, int64_t r0, int64_t r1) {
  WinogradPlan w = p;
  w.row0 = p.row0 + r0;
  w.hp = r1 - r0;
  return w;
}

namespace {

// A block's geometry: its matrices in the slot, the transforms' view, and the last
// panel's split. The last panel of `rem` tiles is a two-vector tile, or the one-vector
// tile when rem <= NR / 2, or a little over that, the one-vector tile and `dots`
// dot-product columns (gemm_half_tail_dots, as the im2col GEMM's tails): maps of 7x7
// tiles (13x13, 14x14: 49 = 32 + 16 + 1 at NR 32) computed 64 columns for 49.
struct BlockView {
  WinogradXform xf;
  float *V, *bt, *Mb;  // input part: V [16][panels][C][nr], bt [16][dots][C]; M [16][M][nt]
  int64_t last_q, rem, dots;
};

BlockView block_view(const ConvShape& s, const WinogradPlan& p, int64_t t0, int64_t count, float* in, float* m) {
  BlockView v;
  const int64_t nr = gemm_nr(), nt = p.nt;
  WinogradXform& xf = v.xf;
  xf.m = p.m;
  xf.C = s.C;
  xf.M = s.M;
  xf.hp = p.hp;
  xf.row0 = p.row0;
  xf.tiles_w = p.tiles_w;
  xf.out_h = s.out[1];
  xf.out_w = s.out[2];
  xf.t0 = t0;
  xf.count = count;
  xf.nt = nt;
  xf.nr = nr;
  xf.panels = nt / nr;
  xf.v_stride = winograd_stride(nt * s.C);
  xf.m_stride = winograd_stride(s.M * nt);
  v.V = in;
  v.bt = in + p.nn * xf.v_stride;
  v.Mb = m;
  v.last_q = (xf.count - 1) / nr;
  v.rem = last_panel_tiles(xf.count, nr);
  v.dots = gemm_half_tail_dots(v.rem, nr);
  return v;
}

// Block b's tiles.
BlockView block_view(const ConvShape& s, const WinogradPlan& p, int64_t b, float* in, float* m) {
  return block_view(s, p, b * p.nt, std::min(p.nt, p.tiles - b * p.nt), in, m);
}

// The input transform of channels [c0, c1) of the view's tiles (and its dot columns' B).
void block_input(const BlockView& view, const WinogradPlan& p, const float* xp, int64_t c0, int64_t c1) {
  BlockView v = view;
  v.xf.c_begin = c0;
  v.xf.c_end = c1;
  winograd_input_transform(v.xf, xp, v.V);
  // The dot columns' B, transposed: bt[xi][j][c] = V_xi[c][last panel, NR / 2 + j].
  const int64_t nr = v.xf.nr, C = v.xf.C;
  for (int xi = 0; xi < p.nn && v.dots > 0; ++xi) {
    const float* vq = v.V + xi * v.xf.v_stride + v.last_q * C * nr + nr / 2;
    float* bx = v.bt + xi * v.dots * C;
    for (int64_t j = 0; j < v.dots; ++j)
      for (int64_t k = c0; k < c1; ++k) bx[j * C + k] = vq[k * nr + j];
  }
}

// The GEMMs and output transform of output channels [m0, m1) of the view's tiles.
void block_rows(const BlockView& view, const WinogradWeights& w, const WinogradPlan& p, float* y, float lo,
                float hi, const float* addend, int64_t m0, int64_t m1, bool m_own) {
  BlockView v = view;  // V and bt only read here
  if (m_own) {
    v.xf.m_row0 = m0;
    v.xf.m_stride = winograd_stride((m1 - m0) * v.xf.nt);
  }
  const int64_t nr = v.xf.nr, C = v.xf.C, M = v.xf.M, nt = v.xf.nt, count = v.xf.count;
  const int64_t vxi = v.xf.v_stride, mxi = v.xf.m_stride, row0 = v.xf.m_row0;
  // nn GEMMs: M_xi [M x nt] = U_xi [M x C] * V_xi [C x nt], k-blocks of kc channels.
  const TileFn tile_fn = gemm_tile_fn();
  // One block (a small map): each row panel of U is read once, from memory (4 MB at 256
  // channels; a model streams all of U per run), so the first column panel's tiles
  // prefetch the next row panel's rows through their K loop, as the GEMM conv does for W
  // (conv_gemm.cc). With several blocks U stays in L2 from the first block on, and there
  // the prefetches cost: resnet50's 28x28 and 56x56 layers 1.06-1.07x the time.
  const bool prefetch_u = p.blocks == 1;
  for (int xi = 0; xi < p.nn; ++xi) {
    const float* u = w.u.get() + int64_t(xi) * M * C;
    const float* bx = v.bt + xi * v.dots * C;
    for (int64_t k0 = 0; k0 < C; k0 += p.kc) {
      Tile tile;
      tile.K = std::min(p.kc, C - k0);
      tile.a_rs = C;
      tile.a_cs = 1;
      tile.ldb = nr;
      tile.ldc = nt;
      Epilogue e;
      e.beta = k0 > 0 ? 1.0f : 0.0f;
      // Rows two panels at a time: the one-vector tile of a last panel of at most NR / 2
      // tiles (13x13, 14x14: 49 = 32 + 16 + a dot column) takes all 12 rows at once
      // (gemm.h: twelve FMA chains instead of six), the whole panels two 6-row tiles.
      for (int64_t i0 = m0; i0 < m1; i0 += 2 * kGemmMR) {
        const int64_t rows = std::min<int64_t>(2 * kGemmMR, m1 - i0);
        for (int64_t q = 0; q * nr < count; ++q) {
          // The one-vector tile has half the FMAs; the output transform reads M only up
          // to `count` rounded up to its vectors.
          tile.nr = static_cast<int>(q == v.last_q && (v.rem <= nr / 2 || v.dots > 0) ? nr / 2 : nr);
          tile.b = v.V + xi * vxi + (q * C + k0) * nr;
          for (int64_t r0 = i0; r0 < i0 + rows; r0 += tile.mr) {
            tile.a = u + r0 * C + k0;
            tile.mr = gemm_tile_rows(tile.nr, nr, i0 + rows - r0);
            tile.c = v.Mb + xi * mxi + (r0 - row0) * nt + q * nr;
            tile.pf = nullptr;
            tile.pf_rows = 0;
            if (prefetch_u && q == 0 && tile.mr == kGemmMR && tile.nr == nr && tile.K >= kPrefetchUMinK) {
              const int64_t nx = r0 + 2 * kGemmMR;
              if (nx < m1) {
                tile.pf = u + nx * C + k0;
                tile.pf_rows = static_cast<int>(std::min<int64_t>(kGemmMR, m1 - nx));
              }
            }
            tile_fn(tile, e);
          }
        }
      }
      // The dot columns of the last panel: pairs 4 rows at a time, a last single column 8.
      DotTile dt;
      dt.K = std::min(p.kc, C - k0);
      dt.a_rs = C;
      dt.ldbt = C;
      dt.ldc = nt;
      gemm_dot_columns(dt, e, v.dots, m0, m1, [&](int64_t j, int64_t i0, DotTile& d, Epilogue&) {
        d.bt = bx + j * C + k0;
        d.a = u + i0 * C + k0;
        d.c = v.Mb + xi * mxi + (i0 - row0) * nt + v.last_q * nr + nr / 2 + j;
      });
    }
  }
  v.xf.m_begin = m0;
  v.xf.m_end = m1;
  winograd_output_transform(v.xf, v.Mb, w.bias.get(), lo, hi, y, addend);
}

}  // namespace

void winograd_block_input(const ConvShape& s, const WinogradPlan& p, int64_t b, const float* xp,
                          float* in, int64_t c0, int64_t c1) {
  block_input(block_view(s, p, b, in, nullptr), p, xp, c0, c1);
}

void winograd_block_rows(const ConvShape& s, const WinogradWeights& w, const WinogradPlan& p,
                         int64_t b, float* y, const float* in, float* m, float lo, float hi,
                         const float* addend, int64_t m0, int64_t m1, bool m_own) {
  block_rows(block_view(s, p, b, const_cast<float*>(in), m), w, p, y, lo, hi, addend, m0, m1, m_own);
}

void winograd_block(const ConvShape& s, const WinogradWeights& w, const WinogradPlan& p,
                    int64_t b, const float* xp, float* y, float* slot, float lo, float hi,
                    const float* addend) {
  winograd_tiles(s, w, p, b * p.nt, std::min(p.nt, p.tiles - b * p.nt), xp, y, slot, lo, hi, addend);
}

void winograd_tiles(const ConvShape& s, const WinogradWeights& w, const WinogradPlan& p,
                    int64_t t0, int64_t count, const float* xp, float* y, float* slot, float lo,
                    float hi, const float* addend) {
  const BlockView v = block_view(s, p, t0, count, slot, slot + p.in_floats);
  block_input(v, p, xp, 0, s.C);
  block_rows(v, w, p, y, lo, hi, addend, 0, s.M, false);
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
