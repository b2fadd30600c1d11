#include "conv_packed.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/eltwise.h"

namespace minnow {
namespace cpu_dense {

int64_t scratch_slots(int64_t tasks, int threads) {
  if (threads <= 1) return 1;
  return std::max<int64_t>(1, std::min<int64_t>({tasks, kernels::kConvMaxSlots, 4 * threads}));
}

// The most private inputs (padded planes + input part) a one-block Winograd plan asks
// scratch for, one per worker (ConvPacked::run_winograd): what the slot budget holds
// (each worker's rows of M come with its input, a share of one M's size in all).
static int64_t winograd_private_inputs(const kernels::WinogradPlan& p) {
  const int64_t bytes = (p.pad_floats + p.in_floats) * int64_t(sizeof(float));
  return std::max<int64_t>(1, std::min<int64_t>(kernels::kConvMaxSlots, kMaxSlotsBytes / std::max<int64_t>(1, bytes)));
}

// One block shared by `parts` workers by output channels (run_winograd): the parts, as
// many as there are threads and row panels, and the floats of one part's own padded input,
// transformed input and M (the most rows a part gets).
static int64_t row_panels(const kernels::ConvShape& s) { return (s.M + kernels::kGemmMR - 1) / kernels::kGemmMR; }
static int64_t winograd_parts(const kernels::ConvShape& s, int64_t threads) {
  return std::min<int64_t>(row_panels(s), threads);
}
// The parts' row panels come from RunContext::parallel_parts, sized by the threads' speeds:
// a part holds at most max_part_items of them.
static int64_t winograd_part_floats(const kernels::ConvShape& s, const kernels::WinogradPlan& p, int64_t parts) {
  const int64_t most = int64_t(RunContext::max_part_items(size_t(row_panels(s)), 1, size_t(parts)));
  const int64_t rows = std::min(s.M, most * kernels::kGemmMR);
  return p.pad_floats + p.in_floats + kernels::winograd_rows_m_floats(p, rows);
}

// Several blocks on several threads (ConvPacked::run_winograd): each worker takes a run
// of tiles, from a multiple of winograd_run_align() on, sized by the threads' speeds, and
// pads the rows they read into memory of its own after its blocks' part, from this float
// of the slot on (a cache line). The items the parts are made of: runs of that many tiles.
static int64_t winograd_own_rows_at(const kernels::WinogradPlan& p) { return (p.slot_floats + 15) / 16 * 16; }
static int64_t winograd_tile_items(const kernels::WinogradPlan& p) {
  return (p.tiles + kernels::winograd_run_align() - 1) / kernels::winograd_run_align();
}
static int64_t winograd_tile_parts(const kernels::WinogradPlan& p, int64_t threads) {
  return std::min<int64_t>(threads, winograd_tile_items(p));
}
// A part's floats: the blocks' part, then the most rows any part pads (its most tiles
// reach one tile row more than they fill), then the input transform's slack.
static int64_t winograd_tile_part_floats(const kernels::ConvShape& s, const kernels::WinogradPlan& p,
                                         int64_t parts) {
  const int64_t items = winograd_tile_items(p);
  const int64_t most = int64_t(RunContext::max_part_items(size_t(items), 1, size_t(parts))) * kernels::winograd_run_align();
  const int64_t tile_rows = (most + p.tiles_w - 1) / p.tiles_w + 1;
  const int64_t rows = std::min(p.hp, p.m * tile_rows + 2);
  const int64_t pad = (s.C * rows * p.wp + kernels::kWinogradInputSlackFloats + 15) / 16 * 16;
  return winograd_own_rows_at(p) + pad;
}

int64_t max_scratch_slots(int64_t tasks, int64_t slot_floats) {
  const int64_t by_bytes = kMaxSlotsBytes / std::max<int64_t>(1, slot_floats * int64_t(sizeof(float)));
  return std::max<int64_t>(1, std::min<int64_t>({tasks, kernels::kConvMaxSlots, by_bytes}));
}

// The channel-blocked depthwise on several threads: each block's output rows in one part
// per thread, the items ordered part by part, so each thread takes (about) its part of
// every block, writing the rows of every channel that the next layer's same thread reads
// (the GEMM convs split pixels; split by channel blocks, each thread read half its input
// from the other's cache). On any count (0), as many parts as slots may go. Only on maps
// of kDwRowPartsMinPixels outputs or more: mobilenet_v2 at 2 threads (Xeon, per-node
// medians of 4 alternating `--profile` runs) 56x56 layers 0.88-0.95x the time and the
// projections after them 0.93-0.95x, but 28x28 1.13-1.17x, 14x14 1.10-1.31x, 7x7 1.19x
// (each part's expand recomputes the rows at its edges, and a block's fixed work is
// done once per part).
static int64_t dw_row_parts(const kernels::ConvShape& s, int threads) {
  if (threads == 1 || s.P() < kDwRowPartsMinPixels) return 1;
  const int64_t t = threads > 0 ? threads : kernels::kConvMaxSlots;
  return std::max<int64_t>(1, std::min<int64_t>(t, s.out[1]));
}
// The channel-blocked depthwise's items on `threads` threads: row parts x channel blocks.
static int64_t dw_block_items(const kernels::ConvShape& s, int threads) {
  return dw_row_parts(s, threads) * s.N * s.M / kernels::dwconv_block_lanes();
}
int64_t ConvPacked::dw_rows_from_pixels(const kernels::ConvShape& s) const {
  return depthwise_ && use_dw_block(s) ? kDwRowPartsMinPixels : std::numeric_limits<int64_t>::max();
}
// fn(block, oh_begin, oh_end, slot) over every item, part by part, in run_in_slots' slots.
template <class F>
static void run_dw_blocks(const RunContext& ctx, const kernels::ConvShape& s, F fn) {
  const int64_t parts = dw_row_parts(s, ctx.num_threads()), blocks = s.N * s.M / kernels::dwconv_block_lanes();
  run_in_slots(ctx, parts * blocks, kernels::dwconv_block_slot_floats(s), "depthwise conv", [&](int64_t i, float* slot) {
    const int64_t part = i / blocks;
    fn(i % blocks, s.out[1] * part / parts, s.out[1] * (part + 1) / parts, slot);
  });
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

// Winograd F(2x2, 3x3) from this many input and output channels, on maps with at least
// half as many output pixels as input channels. Measured on Zen 3 against the im2col
// GEMM (one layer alone, alternating): 1.6-1.7x at 64 channels 56x56 and 128 at 28x28,
// 1.2x at 16 -> 64 channels 56x56; below 16 channels the transforms outweigh the GEMM
// saved. At 256 channels 14x14 (resnet's layer3) it was only 1.1-1.2x there, not worth the
// transformed weights (16/9 of W kept beside it: 4.2 MB a layer); on Zen 4 (AVX-512, the
// GEMM at ~95 GFLOP/s there) per-node minimums of alternating `minnow bench --profile`
// runs: resnet18's 0.84-0.87x the time at 1 thread, 0.80-0.88x at 2, resnet50's
// 0.86-0.94x at 1, so from session 14 on those layers take Winograd (+12.6 MB of
// prepared weights for resnet18, +25 MB for resnet50). At 512 channels 7x7 (49 pixels: 16
// tiles for a 8x8 map, a third of them padding) it is 1.43-1.55x slower.
constexpr int64_t kWinogradMinChannels = 16;
constexpr int64_t kSharedAlignFloats = 16;  // the shared B starts on a cache line
bool ConvPacked::winograd_pays(int64_t pixels, int64_t channels) { return 2 * pixels >= channels; }
// F(4x4, 3x3) (2.25 multiplies per output and channel, F(2x2)'s 4) where its tiles fill a
// 32-wide GEMM panel: maps of about 22x22 and up. On 13x13 / 14x14 (16 tiles of 4x4, 3 or
// 2 columns of them padding, where F(2x2)'s 49 hold 1) it was slower: resnet50's 256-
// channel 14x14 layers 1.06-1.15x the time, squeezenet1_1's 64 -> 256 13x13 ones 1.08x.
// Zen 5, in-process A/B against F(2x2) everywhere (bench/inproc_ab, 10-24 blocks):
// squeezenet1_1 0.954x the time at 1 thread (its 55x55 expands 0.77-0.86x, 27x27 ones
// 0.84-0.87x), 1.00x at 2; resnet18 ~0.925x at 1 thread (56x56 and 28x28 layers 0.71-
// 0.86x), 0.975x at 2; resnet50 0.974x / 0.990x. F(4x4) on the 55x55 maps only (64
// tiles and up), 27x27 / 28x28 with F(2x2): squeezenet1_1 1.022x / 1.011x the time of
// this, resnet18 1.037x / 1.030x. Against ONNX Runtime (bench/compare.sh) the outputs
// still agree within 2e-6 (resnet18) and 6.1e-5 (resnet50, outputs up to 125).
constexpr int64_t kWinograd4MinTiles = 32;
int ConvPacked::winograd_tile(int64_t h, int64_t w) {
  return ((h + 3) / 4) * ((w + 3) / 4) >= kWinograd4MinTiles ? 4 : 2;
}

ConvPacked::ConvPacked(const float* w, int64_t M, int64_t Cg, int64_t taps, int64_t group,
                       const float* bias, int spatial, int winograd_tile, int64_t stride_area) {
  if (winograd_tile > 0 && group == 1 && taps == 9 && spatial == 2 && Cg >= kWinogradMinChannels &&
      M >= kWinogradMinChannels)
    winograd_ = kernels::pack_winograd(w, M, Cg, bias, winograd_tile);
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
    gemm_ = kernels::pack_conv_weights(w, M, Cg * taps, group, bias, kernels::ConvPack::kInPlace, taps == 1);
    direct_name_ = spatial == 2 && kernels::conv_direct_weights_fit(group, Cg, taps, stride_area);
  }
}

// Depthwise planes narrower than two vectors (7, 14 and 28 wide with AVX-512's 16 lanes)
// run channel-blocked: on mobilenet_v2 (Xeon, 1 thread, `minnow bench --profile`, 200 runs)
// 960 x 7x7 0.45 -> 0.10 ms, 384 x 14x14 0.46 -> 0.16, 192 x 28x28 0.26 -> 0.21, the
// stride-2 layers into 28 / 14 / 7 wide 0.24 -> 0.14, 0.16 -> 0.04, 0.18 -> 0.03. Where the
// blocks are built by register transposes (AVX-512, AVX2, SSE4, NEON) they also win on
// wider planes, up to 56 wide outputs: Zen 3 (41 runs, plane -> block) 144 x 56x56 568 ->
// 395 us, 96 x 112 -> 56 stride 2 854 -> 500; Xeon, blocks processed in chunks of rows
// (kernels/f32_dwconv_hwy.cc; 31 alternating runs) 144 x 56x56 490 -> 458 us, 96 x 112 ->
// 56 796 -> 470, 144 x 56 -> 28 531 -> 175. 112-wide outputs stay planes (a row is seven
// whole vectors; 32 x 112x112: 307 vs 379 us on the Xeon, 339 vs 356 on the Zen 3).
// Where the plane kernel reads 3x3 layers' rows in place (AVX-512:
// kernels::dwconv_rows_applies) it replaces the padded planes, not the blocks: one layer
// alone it beat the blocks too (144 x 56x56 174 vs 267 us, 96 x 112 -> 56 245 vs 281),
// but in mobilenet_v2 (per-node minimums of 6 alternating runs of two builds, both
// orders) 144 x 56x56 took 1.21x the blocks' time, the stride-2 layers into 56 and 28
// wide 1.03-1.04x; 32 x 112x112 0.74-0.82x the padded plane's.
bool ConvPacked::use_dw_block(const kernels::ConvShape& s) const {
  if (!kernels::dwconv_block_applies(s)) return false;
  if (s.out[2] < 2 * kernels::dwconv_block_lanes()) return true;
  return kernels::dwconv_block_transposes() && s.out[2] < 64;
}

// A pointwise "expand" conv (and its clamp) computed inside the channel-blocked depthwise
// that alone reads it (kernels::dwconv_expand_block): its output, 6x the channels of its
// input in mobilenet_v2, is never written out and read back, nor transposed into blocks.
// One layer pair alone (Zen 4, 1 thread, medians of 100-200 alternating runs against
// the GEMM conv + dwconv_block): 24 -> 144 at 56x56 0.75-0.87x the time, 16 -> 96 at
// 112x112 then stride 2 0.56-0.78x, 32 -> 192 at 28x28 0.80-0.90x, 64 -> 384 at 14x14
// 0.84-0.95x, 96 -> 576 at 14x14 stride 2 0.89-1.00x; 160 -> 960 at 7x7 1.00-1.04x
// (the GEMM keeps W1 in registers longer there). In the model the 14x14 pairs lost on
// Zen 5 (mobilenet_v2 in one process, bench/inproc_ab, 30-40 blocks of 10 runs): with them
// apart (its 64 -> 384 and 96 -> 576 ones) 0.983-0.987x the time at 1 thread, 0.993-1.009x
// at 2 (five runs); the 28x28 ones apart too 0.986x, all but the 112x112 pair 0.994x. So
// maps under 28x28 stay apart.
constexpr int64_t kExpandMinPixels = 28 * 28;

bool ConvPacked::fuse_expand(const ConvPacked& e, const float* w1, int64_t K, const kernels::ConvShape& s) {
  if (!depthwise_ || expand_.K > 0 || e.depthwise_ || e.winograd_.u || e.direct_name_ || !w1 || K <= 0 ||
      e.gemm_.group != 1 || e.gemm_.M != s.C || e.gemm_.K != K || s.Pin() < kExpandMinPixels || !use_dw_block(s))
    return false;
  expand_wt_ = kernels::alloc_floats(size_t(K * s.C));
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t k = 0; k < K; ++k) expand_wt_[size_t(k * s.C + c)] = w1[c * K + k];
  if (e.gemm_.bias) {
    expand_b_ = kernels::alloc_floats(size_t(s.C));
    std::memcpy(expand_b_.get(), e.gemm_.bias.get(), size_t(s.C) * sizeof(float));
  }
  expand_.K = K;
  expand_.wt_stride = s.C;
  expand_.wt = expand_wt_.get();
  expand_.bias = expand_b_.get();
  expand_.lo = e.lo_;
  expand_.hi = e.hi_;
  expand_shape_ = s;
  return true;
}

void ConvPacked::run_expand(const RunContext& ctx, const kernels::ConvShape& s, const float* x1, float* y) const {
  if (!(s == expand_shape_) || !use_dw_block(s))
    throw PluginError("depthwise conv with its expand fused: shape differs from the one it was prepared for");
  const float* w = dw_w_.get();
  const float* b = dw_b_.get();
  const float lo = lo_, hi = hi_;
  run_dw_blocks(ctx, s, [&](int64_t bl, int64_t oh0, int64_t oh1, float* slot) {
    kernels::dwconv_expand_block(s, bl, oh0, oh1, expand_, x1, w, b, y, slot, lo, hi);
  });
}

// A 3x3 depthwise conv computed inside the pointwise conv that alone reads its output
// ("projection" after it in mobilenet_v2): a band of output rows of every channel into
// the slot (dwconv_rows), then the 1x1's tiles over the band, B read from the slot in
// place; the depthwise's output (1.6 MB at 32 x 112x112) is never written out and read
// back from memory. Bands of about kDwBandFloats: the GEMM's 32-wide B strips of the
// band's C rows stay in L1 while W's row panels pass over them. On maps under
// kDwProjectMinPixels the whole output stays in L2 anyway.
constexpr int64_t kDwProjectMinPixels = 56 * 56;
constexpr int64_t kDwProjectMaxChannels = 256;  // a B strip (C x 32 floats) within L1
constexpr int64_t kDwBandFloats = 16384;
// The bands of the depthwise's output rows (`rows` each) and the floats per channel row
// of a band in the slot: whole panels, so that every tile reads NR floats of each B row
// (gemm.h). A slot holds C such rows.
struct DwBands {
  int64_t count, ld;
};
static DwBands dw_bands(const kernels::ConvShape& ds, int64_t rows) {
  const int64_t nr = kernels::gemm_nr();
  return {(ds.out[1] + rows - 1) / rows, (rows * ds.out[2] + nr - 1) / nr * nr};
}

bool ConvPacked::fuse_depthwise(std::shared_ptr<const ConvPacked> dwp, const kernels::ConvShape& ds,
                                const kernels::ConvShape& s) {
  const ConvPacked& dw = *dwp;
  if (depthwise_ || winograd_.u || expand_.K > 0 || dwp_ || direct_name_ || !gemm_.in_place || gemm_.group != 1 ||
      !s.pointwise() || s.group != 1 || s.C != ds.M || gemm_.K != s.C || gemm_.M != s.M || s.N != ds.N ||
      s.in[0] != ds.out[0] || s.in[1] != ds.out[1] || s.in[2] != ds.out[2])
    return false;
  if (!dw.depthwise_ || dw.expand_.K > 0 || dw.dwp_ || ds.M != ds.C || ds.P() < kDwProjectMinPixels ||
      ds.M > kDwProjectMaxChannels || !kernels::dwconv_rows_applies(ds) || dw.use_dw_block(ds))
    return false;
  dwp_shape_ = ds;
  // Even (the rows kernel writes two at a time), at least 2.
  dwp_rows_ = std::max<int64_t>(2, kDwBandFloats / (ds.C * ds.out[2]) / 2 * 2);
  dwp_ = std::move(dwp);
  return true;
}

void ConvPacked::run_after_dw(const RunContext& ctx, const kernels::ConvShape& s, const float* x0,
                              const float* w_rows, float* y, const float* addend) const {
  const kernels::ConvShape& ds = dwp_shape_;
  if (!dwp_ || !s.pointwise() || s.N != ds.N || s.C != ds.M || s.in[1] != ds.out[1] || s.in[2] != ds.out[2])
    throw PluginError("1x1 conv with its depthwise fused: shape differs from the one it was prepared for");
  // The addend may be y itself (adds_onto_output): each tile reads its addend elements
  // before it writes them, K in one block.
  const int64_t C = s.C, M = s.M, P = s.P(), OH = ds.out[1], OW = ds.out[2];
  const int64_t rows = dwp_rows_;
  const DwBands b = dw_bands(ds, rows);
  const int64_t bands = b.count, ld = b.ld, nr = kernels::gemm_nr();
  const float* dw_w = dwp_->dw_w_.get();
  const float* dw_b = dwp_->dw_b_.get();
  const float dw_lo = dwp_->lo_, dw_hi = dwp_->hi_;
  const kernels::TileFn tile_fn = kernels::gemm_tile_fn(), tall_fn = kernels::gemm_tall_tile_fn();
  const float* tall = gemm_.tall.get();
  const float* bias = gemm_.bias.get();
  const float lo = lo_, hi = hi_;
  run_in_slots(ctx, s.N * bands, C * ld, "1x1 conv with its depthwise fused", [&](int64_t i, float* band) {
    const int64_t n = i / bands, oh0 = i % bands * rows, oh1 = std::min(OH, oh0 + rows);
    const int64_t px = (oh1 - oh0) * OW, base = n * M * P + oh0 * OW;
    for (int64_t c = 0; c < C; ++c)
      kernels::dwconv_rows(ds, n * C + c, oh0, oh1, x0, dw_w, dw_b, band + c * ld, OW, dw_lo, dw_hi);
    kernels::Epilogue e;
    e.bias_per_row = true;
    e.lo = lo;
    e.hi = hi;
    kernels::Tile t;
    t.K = C;
    t.ldb = ld;
    t.ldc = P;
    for (int64_t j = 0; j < px; j += nr) {
      const int64_t cols = std::min(nr, px - j);
      if (tall) {  // 16 rows x one vector (gemm.h): each B strip read once or twice
        for (int64_t r0 = 0; r0 < M; r0 += kernels::kGemmTallRows)
          for (int64_t h = 0; h < cols; h += nr / 2) {
            t.a = tall + r0 * C;
            t.b = band + j + h;
            t.c = y + base + r0 * P + j + h;
            t.mr = static_cast<int>(std::min<int64_t>(kernels::kGemmTallRows, M - r0));
            t.nr = static_cast<int>(std::min(nr / 2, cols - h));
            e.bias = bias ? bias + r0 : nullptr;
            e.addend = addend ? addend + base + r0 * P + j + h : nullptr;
            tall_fn(t, e);
          }
        continue;
      }
      t.a_rs = C;  // W's rows in place
      t.a_cs = 1;
      t.b = band + j;
      t.nr = static_cast<int>(cols);
      for (int64_t i0 = 0; i0 < M; i0 += kernels::kGemmMR) {
        t.a = w_rows + i0 * C;
        t.c = y + base + i0 * P + j;
        t.mr = static_cast<int>(std::min<int64_t>(kernels::kGemmMR, M - i0));
        e.bias = bias ? bias + i0 : nullptr;
        e.addend = addend ? addend + base + i0 * P + j : nullptr;
        tile_fn(t, e);
      }
    }
  });
}

kernels::ConvPlan ConvPacked::plan(const kernels::ConvShape& s, int threads) const {
  std::lock_guard<std::mutex> lock(plan_mu_);
  if (plan_threads_ != threads || !(plan_shape_ == s)) {
    plan_ = kernels::plan_conv(s, threads, input_by_channels(s, threads));
    plan_shape_ = s;
    plan_threads_ = threads;
  }
  return plan_;
}

bool ConvPacked::use_winograd(const kernels::ConvShape& s) const {
  return winograd_.u && kernels::winograd_applies(s) && s.C == winograd_.C && s.M == winograd_.M &&
         winograd_pays(s.P(), s.C);
}

// A K split's part slot: its partial sums ([M, P], whole cache lines), then the GEMM's slot.
static int64_t k_part_slot_floats(const kernels::ConvShape& s, const kernels::ConvPlan& p) {
  return (s.M * s.P() + kSharedAlignFloats - 1) / kSharedAlignFloats * kSharedAlignFloats + p.slot_floats;
}

// The scratch floats a K-split plan (p.k_parts > 1) takes on `threads` threads: one slot
// per part, each with the part's partial sums.
static int64_t k_parts_floats(const kernels::ConvShape& s, const kernels::ConvPlan& p, int threads) {
  return SlotLayout::floats_for(threads, p.k_parts, k_part_slot_floats(s, p));
}

// With threads > 0, what each path's run takes on that many threads (run_in_slots'
// run_slots, run_winograd's slots and private inputs, the GEMM's plan for that count);
// with 0, the most any thread count takes.
size_t ConvPacked::scratch_bytes(const kernels::ConvShape& s, int threads) const {
  const auto bytes = [](int64_t floats) { return size_t(floats) * sizeof(float); };
  if (dwp_) {
    const DwBands b = dw_bands(dwp_shape_, dwp_rows_);
    return run_in_slots_bytes(threads, s.N * b.count, s.C * b.ld);
  }
  if (use_winograd(s)) {
    const kernels::WinogradPlan p = kernels::plan_winograd(s, winograd_.m);
    if (p.blocks == 1) {
      // One input and one M all the workers share (run_winograd's fallback), or, on several
      // threads, a part of its own per thread laid out by thread (as the budget allows).
      int64_t floats = p.pad_floats + p.slot_floats;
      const int64_t most = winograd_private_inputs(p);
      if (threads > 0) {
        const int64_t parts = winograd_parts(s, threads);
        if (parts > 1 && parts <= most)
          floats = std::max(floats, SlotLayout::floats_for(threads, parts, winograd_part_floats(s, p, parts)));
      } else {  // any count: the parts one after another (SlotLayout's layout where shares are short)
        for (int64_t parts = 2; parts <= std::min(most, winograd_parts(s, most)); ++parts)
          floats = std::max(floats, parts * winograd_part_floats(s, p, parts));
      }
      return bytes(floats);
    }
    // One padded input the slots share (one thread), or on several a padded part per slot
    // (run_winograd), for that count or for any.
    if (threads == 1) return bytes(p.pad_floats + p.slot_floats);
    int64_t floats = 0;
    for (int t = threads > 0 ? threads : 2; t <= (threads > 0 ? threads : kernels::kConvMaxSlots); ++t) {
      const int64_t parts = winograd_tile_parts(p, t);
      floats = std::max(floats, SlotLayout::floats_for(t, parts, winograd_tile_part_floats(s, p, parts)));
    }
    return bytes(std::max(floats, p.pad_floats + p.slot_floats));
  }
  if (depthwise_ && use_dw_block(s))
    return run_in_slots_bytes(threads, dw_block_items(s, threads), kernels::dwconv_block_slot_floats(s));
  if (depthwise_) return run_in_slots_bytes(threads, s.N * s.M, kernels::dwconv_plane_slot_floats(s));
  if (use_direct(s)) return bytes(rows_scratch_floats(s));  // the thread count does not change it
  if (threads > 0) {
    // The plan run() makes for this count: its slots, and room for a shared B after them
    // (run() builds one when the scratch holds both); or a K split's parts.
    const kernels::ConvPlan p = plan(s, threads);  // cached for the runs on that many threads
    if (p.k_parts > 1) return bytes(k_parts_floats(s, p, threads));
    int64_t slots = run_slots(threads, p.tasks, p.slot_floats);
    if (p.shared_b_floats > 0) slots = std::max(slots, run_slots(threads, p.k_blocks, p.slot_floats));
    return bytes(SlotLayout::floats_for(threads, slots, p.slot_floats) +
                 (p.shared_b_floats > 0 ? p.shared_b_floats + kSharedAlignFloats : 0));
  }
  // The widest column block (one thread's plan) and the most tasks any thread count
  // gives: every column panel and row panel its own task.
  const kernels::ConvPlan p = kernels::plan_conv(s, 1);
  const int64_t nr = kernels::gemm_nr();
  const int64_t max_tasks = s.N * s.group * ((s.P() + nr - 1) / nr) *
                            ((s.Mg() + kernels::kGemmMR - 1) / kernels::kGemmMR);
  // A shared B (plan_conv with several workers), after the slots.
  const int64_t shared = kernels::conv_shared_b_floats(s);
  int64_t floats = std::min<int64_t>(max_tasks, kernels::kConvMaxSlots) * p.slot_floats +
                   (shared > 0 ? shared + kSharedAlignFloats : 0);
  // A K split, on the counts that take one (its parts' partial sums).
  for (int t = 2; t <= kernels::kConvMaxKParts; ++t) {
    const kernels::ConvPlan pk = kernels::plan_conv(s, t, input_by_channels(s, t));
    if (pk.k_parts > 1) floats = std::max(floats, k_parts_floats(s, pk, t));
  }
  return bytes(floats);
}

// One part per slot, laid out by thread (SlotLayout): the run team's static split gives
// worker j part j, whose partial sums then stay in its cache; then each worker adds up
// its share of the outputs from all the parts (f32_sum_clamp).
void ConvPacked::run_k_parts(const RunContext& ctx, const kernels::ConvShape& s, const kernels::ConvPlan& p,
                             const float* x, const float* w_rows, float* y, const float* addend) const {
  const int64_t slot_floats = k_part_slot_floats(s, p), partial_floats = slot_floats - p.slot_floats;
  const int64_t floats = int64_t(ctx.scratch_size() / sizeof(float));
  if (floats < k_parts_floats(s, p, ctx.num_threads())) throw PluginError("conv: scratch too small");
  float* scratch = static_cast<float*>(ctx.scratch());
  const SlotLayout layout(ctx.num_threads(), p.k_parts, slot_floats, floats);
  ctx.parallel_for(size_t(p.k_parts), 1, [&](size_t j0, size_t j1) {
    for (size_t j = j0; j < j1; ++j) {
      float* partial = layout.at(scratch, int64_t(j));
      kernels::conv_gemm_part(s, gemm_, w_rows, p, int64_t(j), x, partial, partial + partial_floats);
    }
  });
  const float* parts[kernels::kConvMaxKParts];
  for (int64_t j = 0; j < p.k_parts; ++j) parts[j] = layout.at(scratch, j);
  const int64_t n = s.M * s.P();
  constexpr int64_t kLine = 16;  // chunks of whole cache lines of y
  const int64_t chunks = (n + kLine - 1) / kLine;
  const float lo = lo_, hi = hi_;
  ctx.parallel_for(size_t(chunks), 1, [&](size_t c0, size_t c1) {
    const int64_t i0 = int64_t(c0) * kLine, i1 = std::min(n, int64_t(c1) * kLine);
    const float* at[kernels::kConvMaxKParts];
    for (int64_t j = 0; j < p.k_parts; ++j) at[j] = parts[j] + i0;
    kernels::f32_sum_clamp(at, p.k_parts, addend ? addend + i0 : nullptr, y + i0, i1 - i0, lo, hi);
  });
}

// The GEMM path with plan p (not a K split): every task over the slots, after the shared
// B where the plan has one and the scratch holds it.
void ConvPacked::run_gemm(const RunContext& ctx, const kernels::ConvShape& s, const kernels::ConvPlan& p,
                          const float* x, const float* w_rows, float* y, const float* addend) const {
  const int threads = ctx.num_threads();
  const float lo = lo_, hi = hi_;
  float* shared = nullptr;
  int64_t slots_floats = int64_t(ctx.scratch_size() / sizeof(float));  // what the slots may take
  if (p.shared_b_floats > 0) {
    // B built once, its k-blocks over the workers, at the end of the scratch (the slots
    // are at its start), then every row chunk reads it; without room for both, each
    // chunk builds its own.
    const int64_t total = slots_floats;
    const int64_t at = (total - p.shared_b_floats) / kSharedAlignFloats * kSharedAlignFloats;
    const int64_t slots = std::max(run_slots(threads, p.k_blocks, p.slot_floats), run_slots(threads, p.tasks, p.slot_floats));
    if (at >= slots * p.slot_floats) {
      shared = static_cast<float*>(ctx.scratch()) + at;
      slots_floats = at;
      run_in_slots(
          ctx, p.k_blocks, p.slot_floats, "conv",
          [&](int64_t kb, float* slot) { kernels::conv_gemm_build_b(s, gemm_, p, kb, x, shared, slot); }, at);
    }
  }
  if (p.m_chunks > 1 && p.tasks == p.m_chunks && threads > 1) {
    // Row chunks only (one image, group and column block): one or two a thread, each
    // with a fixed cost (its B, or its reads of the shared B), so the rows go in parts
    // sized by the threads' speeds (RunContext::parallel_parts), a slot a part laid out as
    // run_in_slots lays them out.
    run_parts_in_slots(
        ctx, row_panels(s), run_slots(threads, p.tasks, p.slot_floats), p.slot_floats, "conv",
        [&](int64_t a, int64_t b, float* slot) {
          kernels::conv_gemm_rows(s, gemm_, w_rows, p, a, b, x, y, slot, lo, hi, addend, shared);
        },
        slots_floats);
    return;
  }
  run_in_slots(
      ctx, p.tasks, p.slot_floats, "conv",
      [&](int64_t t, float* slot) { kernels::conv_gemm_task(s, gemm_, w_rows, p, t, x, y, slot, lo, hi, addend, shared); },
      slots_floats);
}

void ConvPacked::run(const RunContext& ctx, const kernels::ConvShape& s, const float* x,
                     const float* w_rows, float* y, const float* addend) const {
  const int threads = ctx.num_threads();
  if (use_winograd(s)) return run_winograd(ctx, s, x, y, addend);
  if (use_direct(s)) return run_direct(ctx, s, x, w_rows, y, addend);
  if (!depthwise_) {
    const kernels::ConvPlan p = plan(s, threads);
    if (p.k_parts > 1) return run_k_parts(ctx, s, p, x, w_rows, y, addend);
    return run_gemm(ctx, s, p, x, w_rows, y, addend);
  }
  if (addend && addend == y) throw PluginError("depthwise conv: the addend shares the output's memory");
  // The depthwise kernels add no addend themselves: with one, they run unclamped and a
  // pass over each plane adds it and clamps (one pass instead of the Add's and the
  // activation's).
  const float lo = addend ? -std::numeric_limits<float>::infinity() : lo_;
  const float hi = addend ? std::numeric_limits<float>::infinity() : hi_;
  const float* w = dw_w_.get();
  const float* b = dw_b_.get();
  const int64_t P = s.P();
  if (use_dw_block(s)) {
    run_dw_blocks(ctx, s, [&](int64_t bl, int64_t oh0, int64_t oh1, float* slot) {
      kernels::dwconv_block(s, bl, oh0, oh1, x, w, b, y, slot, lo, hi);
    });
  } else {
    run_in_slots(ctx, s.N * s.M, kernels::dwconv_plane_slot_floats(s), "depthwise conv",
                 [&](int64_t pl, float* slot) { kernels::dwconv_plane(s, pl, x, w, b, y, slot, lo, hi); });
  }
  if (!addend) return;
  const float clo = lo_, chi = hi_;
  ctx.parallel_for(size_t(s.N * s.M), 16, [&](size_t p0, size_t p1) {
    for (size_t pl = p0; pl < p1; ++pl) {
      float* yp = y + int64_t(pl) * P;
      const float* rp = addend + int64_t(pl) * P;
      for (int64_t i = 0; i < P; ++i) yp[i] = std::min(std::max(yp[i] + rp[i], clo), chi);
    }
  });
}

int64_t ConvPacked::rows_scratch_floats(const kernels::ConvShape& s) const {
  // Direct: one image's planes and the tap offsets (run_direct); GEMM: one slot.
  if (use_direct(s)) return kernels::plan_direct_conv(s, 1).planes_floats + s.K();
  return kernels::plan_conv(s, 1).slot_floats;
}

void ConvPacked::run_rows(const kernels::ConvShape& s, const float* x, const float* w_rows, float* y,
                          float* scratch, int64_t scratch_floats) const {
  if (!runs_rows()) throw PluginError("conv: no one-thread run of rows for this kernel");
  // The usual paths on a context of one thread (its parallel_for runs inline), without
  // the node's cached plan: a band's shape differs from the node's and from band to band.
  mn_run_ctx one{};
  one.struct_size = sizeof(one);
  one.num_threads = 1;
  one.scratch = scratch;
  one.scratch_size = size_t(scratch_floats) * sizeof(float);
  const RunContext ctx(&one);
  if (use_direct(s)) return run_direct(ctx, s, x, w_rows, y, nullptr);
  run_gemm(ctx, s, kernels::plan_conv(s, 1), x, w_rows, y, nullptr);
}

// Per image: its phase planes (channels over the workers), then the output rows' tasks.
void ConvPacked::run_direct(const RunContext& ctx, const kernels::ConvShape& s, const float* x, const float* w_rows,
                            float* y, const float* addend) const {
  const kernels::DirectConvPlan p = kernels::plan_direct_conv(s, ctx.num_threads());
  if (ctx.scratch_size() < size_t(p.planes_floats + s.K()) * sizeof(float))
    throw PluginError("direct conv: scratch too small");
  float* planes = static_cast<float*>(ctx.scratch());
  int32_t* off = reinterpret_cast<int32_t*>(planes + p.planes_floats);
  kernels::direct_conv_offsets(s, p, off);
  const float lo = lo_, hi = hi_;
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * s.Pin();
    float* yn = y + n * s.M * s.P();
    const float* rn = addend ? addend + n * s.M * s.P() : nullptr;
    ctx.parallel_for(size_t(s.C), 1, [&](size_t c0, size_t c1) {
      kernels::direct_conv_planes(s, p, xn, int64_t(c0), int64_t(c1), planes);
    });
    ctx.parallel_for(size_t(p.tasks), 1, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t)
        kernels::direct_conv_task(s, gemm_, w_rows, p, int64_t(t), planes, off, yn, lo, hi, rn);
    });
  }
}

// Per image: its input zero-padded once (channels split over the workers), then the tile
// blocks, each worker reusing one scratch slot.
void ConvPacked::run_winograd(const RunContext& ctx, const kernels::ConvShape& s, const float* x,
                              float* y, const float* addend) const {
  const float lo = lo_, hi = hi_;
  const kernels::WinogradPlan p = kernels::plan_winograd(s, winograd_.m);
  const int threads = ctx.num_threads();
  const int64_t slots = scratch_slots(p.blocks, threads);
  const int64_t scratch_floats = int64_t(ctx.scratch_size() / sizeof(float));
  // Several blocks on several threads: a padded part per slot (below), where it fits (the
  // scratch the session asked for this thread count holds it; SlotLayout puts the slots
  // one after another where a thread's share cannot hold its slots).
  const int64_t tile_parts = winograd_tile_parts(p, threads);
  const int64_t own_floats = p.blocks > 1 && threads > 1 ? winograd_tile_part_floats(s, p, tile_parts) : 0;
  const bool own_rows = own_floats > 0 && tile_parts * own_floats <= scratch_floats;
  if (!own_rows && scratch_floats < p.pad_floats + slots * p.slot_floats)
    throw PluginError("winograd conv: scratch too small");
  float* xp = static_cast<float*>(ctx.scratch());
  float* slot0 = xp + p.pad_floats;
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * s.Pin();
    float* yn = y + n * s.M * s.P();
    const float* rn = addend ? addend + n * s.M * s.P() : nullptr;
    const int64_t parts = scratch_slots(s.C, threads);
    if (p.blocks == 1 && threads > 1) {
      // One block (a small map, plan_winograd) shared by the workers by output channels,
      // each reading only its rows of U and writing its rows of one M.
      const int64_t panels = row_panels(s);
      const int64_t mparts = winograd_parts(s, threads);
      const int64_t part_floats = winograd_part_floats(s, p, mparts);
      const int64_t floats = int64_t(ctx.scratch_size() / sizeof(float));
      if (mparts > 1 && mparts <= winograd_private_inputs(p) && floats >= mparts * part_floats) {
        // Room for a part of its own per worker, in its thread's share of the scratch
        // (SlotLayout): each pads and transforms every channel itself (a small share of
        // the block's time), its GEMMs read only what its own thread wrote, and its rows
        // of M lie together in memory no other thread writes, in this layer or the next.
        // Shared by channel parts, the transformed input was written by one thread and
        // read by all, and rewritten by the next layer while the other threads' caches
        // still held it: on two vCPUs in different core complexes (Zen 5) the parallel
        // input phase of a 256-channel 14x14 layer took ~110 us of wall time where one
        // thread does it in ~55.
        // Row panels in parts sized by the threads' speeds (each part's transform is a
        // fixed cost: two parts cannot be evened out by stealing).
        run_parts_in_slots(
            ctx, panels, mparts, part_floats, "winograd conv",
            [&](int64_t a, int64_t b, float* xpj) {
              float* in = xpj + p.pad_floats;
              float* m = in + p.in_floats;
              kernels::winograd_pad_input(s, p, xn, 0, s.C, xpj);
              kernels::winograd_block_input(s, p, 0, xpj, in, 0, s.C);
              const int64_t m0 = std::min(s.M, a * kernels::kGemmMR), m1 = std::min(s.M, b * kernels::kGemmMR);
              kernels::winograd_block_rows(s, winograd_, p, 0, yn, in, m, lo, hi, rn, m0, m1, true);
            },
            floats);
        continue;
      }
      // Otherwise each pads and transforms a part of the input channels into one input,
      // then each computes its output channels from all of it.
      float* slot = slot0;
      ctx.parallel_for(size_t(parts), 1, [&](size_t a, size_t b) {
        const int64_t c0 = s.C * int64_t(a) / parts, c1 = s.C * int64_t(b) / parts;
        kernels::winograd_pad_input(s, p, xn, c0, c1, xp);
        kernels::winograd_block_input(s, p, 0, xp, slot, c0, c1);
      });
      ctx.parallel_parts(size_t(panels), 1, size_t(mparts), [&](size_t, size_t a, size_t b) {
        const int64_t m0 = std::min(s.M, int64_t(a) * kernels::kGemmMR);
        const int64_t m1 = std::min(s.M, int64_t(b) * kernels::kGemmMR);
        kernels::winograd_block_rows(s, winograd_, p, 0, yn, slot, slot + p.in_floats, lo, hi, rn, m0, m1);
      });
      continue;
    }
    if (own_rows) {
      // Each worker takes a run of tiles sized by the threads' speeds (parallel_parts: a
      // slowed vCPU gets fewer), pads the rows they read (theirs and two more) into memory
      // of its own, in its thread's share of the scratch (SlotLayout), then runs them in
      // blocks from its run's start: no line of the padded input is written by one thread
      // in one layer and by the other in the next, as the rows of one shared padded input
      // were (each layer's row split falls elsewhere in it). Rows at the runs' edges are
      // padded twice. (Whole blocks, stolen by idle workers, went in units of nt tiles: 7
      // of them on a 55x55 map in 4x4 tiles, the last of 4.)
      const int64_t align = kernels::winograd_run_align();
      run_parts_in_slots(
          ctx, winograd_tile_items(p), tile_parts, own_floats, "winograd conv",
          [&](int64_t a, int64_t b, float* slot) {
            const int64_t ta = a * align, tb = std::min(p.tiles, b * align);
            float* rows = slot + winograd_own_rows_at(p);
            int64_t r0 = 0, r1 = 0;
            kernels::winograd_tiles_rows(p, ta, tb, &r0, &r1);
            const kernels::WinogradPlan pr = kernels::winograd_worker_rows(p, r0, r1);
            kernels::winograd_pad_input_rows(s, pr, xn, r0, r1, rows);
            for (int64_t t0 = ta; t0 < tb; t0 += p.nt)
              kernels::winograd_tiles(s, winograd_, pr, t0, std::min(p.nt, tb - t0), rows, yn, slot, lo, hi, rn);
          },
          scratch_floats);
      continue;
    }
    // One thread (or too little scratch): one padded input, by rows split as the blocks
    // are (the same parallel_for over the same slots): each worker pads the rows its
    // blocks read, and its input transform reads them from its own cache. Split by
    // channels, half of every block's input came from the other worker's cache; on two
    // vCPUs in different core complexes (Zen 5) that doubled the input transform's time.
    ctx.parallel_for(size_t(slots), 1, [&](size_t s0, size_t s1) {
      const int64_t b0 = p.blocks * int64_t(s0) / slots, b1 = p.blocks * int64_t(s1) / slots;
      kernels::winograd_pad_input_rows(s, p, xn, kernels::winograd_block_pad_row(p, b0),
                                       kernels::winograd_block_pad_row(p, b1), xp);
    });
    const SlotLayout layout(threads, slots, p.slot_floats, int64_t(ctx.scratch_size() / sizeof(float)) - p.pad_floats);
    ctx.parallel_for(size_t(slots), 1, [&](size_t s0, size_t s1) {
      for (size_t sl = s0; sl < s1; ++sl) {
        float* slot = layout.at(slot0, int64_t(sl));
        const int64_t b0 = p.blocks * int64_t(sl) / slots, b1 = p.blocks * int64_t(sl + 1) / slots;
        for (int64_t b = b0; b < b1; ++b) kernels::winograd_block(s, winograd_, p, b, xp, yn, slot, lo, hi, rn);
      }
    });
  }
}

}  // namespace cpu_dense
}  // namespace minnow
