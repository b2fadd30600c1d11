// Convolution as packed GEMM (kernels/conv.h): B blocks built by kernels/im2col.h into a
// KC x NC scratch block, or copied from X's rows for 1x1 stride-1 convs; plus the direct
// reference.
#include <algorithm>
#include <numeric>
#include <cmath>
#include <limits>
#include <cstring>

#include "kernels/conv.h"
#include "kernels/im2col.h"

namespace minnow {
namespace cpu_dense {
namespace kernels {

namespace {

// KC: a 6 x KC panel of W (6 KB) stays in L1 and a KC x NC block of B (up to 128 KB with
// AVX2) in L2 while the micro-kernel sweeps it.
constexpr int64_t kMaxKC = 256;
constexpr int64_t kPanelsPerBlock = 8;  // NC = 8 * NR
constexpr int64_t kDeepMaxKC = 1024, kDeepKcBBytes = 256 * 1024;  // plan_conv: AVX2, small maps on AVX-512
constexpr int64_t kDeepMaxPanels = 2;  // plan_conv, AVX-512: deep K blocks on maps this small
constexpr int64_t kMcPanels = 16;       // MC = 16 * 6 rows of W per L2 block
constexpr int64_t kRowsOuterMaxBytes = 64 * 1024;      // B blocks this small: row panels outer
constexpr int64_t kStreamedWBytes = int64_t(4) << 20;  // plan_time: W re-read per column block

// Prefetches `rows` rows of kc floats, `ld` floats apart, into L2.
inline void prefetch_rows(const float* a, int64_t ld, int64_t rows, int64_t kc) {
  for (int64_t r = 0; r < rows; ++r) {
    const char* row = reinterpret_cast<const char*>(a + r * ld);
    for (int64_t b = 0; b < kc * int64_t(sizeof(float)); b += 64) __builtin_prefetch(row + b, 0, 2);
  }
}

// Prefetches the lines of a tile's `rows` rows of `cols` floats, `ld` apart, into L1 (for
// writing when `write`).
inline void prefetch_tile_rows(const float* a, int64_t ld, int rows, int cols, bool write) {
  for (int r = 0; r < rows; ++r) {
    if (write) {
      __builtin_prefetch(a + r * ld, 1, 3);
      __builtin_prefetch(a + r * ld + cols - 1, 1, 3);
    } else {
      __builtin_prefetch(a + r * ld, 0, 3);
      __builtin_prefetch(a + r * ld + cols - 1, 0, 3);
    }
  }
}

// The next row panel of W prefetched through the tile's K loop (Tile::pf) from this many
// k on; shorter rows (four lines at K = 64) are prefetched before the tile.
constexpr int64_t kPrefetchInTileMinK = 128;

// Whether kc rows of X, P floats apart, spread over enough sets of a 32 KB 8-way L1 (64
// sets) that a 16-float strip of them stays there: at most 4 of its lines a set. Rows
// that start mid-line spread over all sets; rows 64 * 2^j bytes apart share 64 / 2^j.
int64_t l1_sets_of_rows(int64_t P) {
  const int64_t bytes = P * int64_t(sizeof(float));
  return bytes % 64 != 0 ? 64 : 64 / std::gcd<int64_t>(bytes / 64, 64);
}
constexpr int64_t kSpreadRowsPerSet = 4;
bool rows_spread(int64_t P, int64_t kc, int64_t per_set = kSpreadRowsPerSet) {
  const int64_t sets = l1_sets_of_rows(P);
  return (kc + sets - 1) / sets <= per_set;
}
// 32-wide strips read in place (AVX-512) while their rows fill at most the 12 ways of a
// 48 KB L1 (Ice Lake on, Zen 5) in the sets they fall on.
constexpr int64_t kInPlaceWideRowsPerSet = 12;

// Pointwise convs with at most this many output channels read their B panels from X in
// place (gemm_task's measurements); more copy them, unless in_place_rows_of_w allows it.
constexpr int64_t kInPlaceBMaxRows = 96;

// Whether a pointwise conv's tiles may read B from X in place, where X's rows spread over
// L1: up to kInPlaceBMaxRows rows of W, or with 32-wide strips (AVX-512) any number where
// X's rows start on cache lines (28x28 maps: 3136 bytes, 49 lines apart).
bool in_place_rows_of_w(int64_t Mg, int64_t P, int64_t nr) {
  return Mg <= kInPlaceBMaxRows || (nr >= 32 && P * int64_t(sizeof(float)) % 64 == 0);
}
// Whether gemm_task reads a pointwise conv's B from X in place with k-blocks of kc rows.
bool reads_b_in_place(const ConvShape& s, int64_t kc, int64_t nr) {
  return s.pointwise() && in_place_rows_of_w(s.Mg(), s.P(), nr) &&
         rows_spread(s.P(), kc, nr >= 32 ? kInPlaceWideRowsPerSet : kSpreadRowsPerSet);
}

}  // namespace

bool ConvShape::pointwise() const {
  for (int i = 0; i < 3; ++i)
    if (k[i] != 1 || s[i] != 1 || pb[i] != 0 || out[i] != in[i]) return false;
  return true;
}

ConvWeights pack_conv_weights(const float* w, int64_t M, int64_t K, int64_t group,
                              const float* bias, ConvPack how, bool one_by_one) {
  ConvWeights cw;
  cw.M = M;
  cw.group = group;
  cw.K = K;
  cw.in_place = how == ConvPack::kInPlace;
  const int64_t Mg = M / group;
  if (!cw.in_place)
    for (int64_t g = 0; g < group; ++g) cw.groups.push_back(pack_a(w + g * Mg * K, Mg, K, K));
  if (one_by_one && cw.in_place && group == 1 && gemm_tall_pays(M)) cw.tall = pack_tall(w, M, K);
  if (bias) {
    cw.bias = alloc_floats(size_t(M));
    std::memcpy(cw.bias.get(), bias, size_t(M) * sizeof(float));
  }
  return cw;
}

namespace {

// Estimated time of a plan on `threads` workers, in ns: tasks (column block x row chunk,
// per image and group) longest first, each given to the least loaded worker (a
// parallel_for balances about that well). A task costs its GEMM (~70 GFLOP/s), its own B
// block (im2col or copy, ~0.3 ns per float; redone by every row chunk of a column block)
// and ~1 us to start. A W of 4 MB or more also costs each task its rows of W (~0.5 ns a
// float): every column block streams all of W again. Without that, resnet18's 512-channel
// 7x7 layers (W 9.4 MB) split into column blocks of 32 and 17 pixels and scaled 1.4x on
// two threads; with it, one block of 49 in two row chunks (Zen 3, `--profile`, 5 rounds:
// its 7x7 convs 7.4 -> 5.7 ms, resnet50's 11.5 -> 9.7 ms). Charging it from 512 KB on made
// the 14x14 layers (W 1-2.4 MB, still in L3 for the second block) 16-22 % slower.
double plan_time(const ConvShape& s, int64_t nc, int64_t panels_per_chunk, int threads) {
  const int64_t K = s.K(), P = s.P(), Mg = s.Mg(), images = s.N * s.group;
  const int64_t rows = panels_per_chunk * kGemmMR;
  const int64_t blocks = (P + nc - 1) / nc, chunks = (Mg + rows - 1) / rows;
  const int64_t last_cols = P - (blocks - 1) * nc, last_rows = Mg - (chunks - 1) * rows;
  const double w_ns = Mg * K * int64_t(sizeof(float)) >= kStreamedWBytes ? 0.5 : 0.0;
  auto cost = [&](int64_t cols, int64_t r) {
    return double(cols) * double(K) * (double(r) * 2.0 / 70.0 + 0.3) + double(r) * double(K) * w_ns + 1000.0;
  };
  // The four task sizes (full, last column block, last row chunk, both) and their counts.
  struct Group {
    double cost;
    int64_t count;
  } g[4] = {{cost(nc, rows), (blocks - 1) * (chunks - 1) * images},
            {cost(last_cols, rows), (chunks - 1) * images},
            {cost(nc, last_rows), (blocks - 1) * images},
            {cost(last_cols, last_rows), images}};
  std::sort(g, g + 4, [](const Group& a, const Group& b) { return a.cost > b.cost; });
  constexpr int kMaxWorkers = 64;
  const int w = std::max(1, std::min(threads, kMaxWorkers));
  double load[kMaxWorkers] = {};
  for (const Group& t : g)
    for (int64_t n = 0; n < t.count; ++n) *std::min_element(load, load + w) += t.cost;
  return *std::max_element(load, load + w);
}

// 1x1 convs (stride 1 or more) on small maps (2 NR < P <= 8 NR: 14x14 with 32-wide
// panels) with a large W (kRowsShareBMinWBytes or more) that copy B (more than 96 output
// channels): on several threads one column block in row chunks that share one B, instead
// of plan_time's pick, column blocks of 3-4 panels that each stream all of W (its 1 MB
// weights from memory twice at 2 threads). Zen 5 (AVX-512), 2 threads, resnet50, per-node
// medians of alternating `--profile` runs: 1x1 256 -> 1024 at 14x14 0.39-0.44 -> 0.32-0.35
// ms, 1024 -> 256 0.38-0.44 -> 0.36-0.39, the stride-2 512 -> 1024 0.74-0.77 -> 0.62-0.63;
// whole model (bench/ab.sh, 9 alternating rounds) 0.982-0.985x the time. Not for small W
// (mobilenet_v2's 64 -> 384 and 96 -> 576 at 14x14: the model 1.055x, B rebuilt per
// column is cheap there), nor 7x7 maps (1x1 2048 -> 512: 1.07x; plan_time already
// splits those in row chunks, each copying its own small B), nor the 3x3 stride-2 layer
// at 14x14 (1.07x), nor where the tiles read B from X in place (reads_b_in_place; at
// most KC rows a k-block on these maps).
constexpr int64_t kRowsShareBMinWBytes = 512 * 1024;
bool rows_share_b(const ConvShape& s) {
  const int64_t nr = gemm_nr();
  return s.taps() == 1 && s.N * s.group == 1 && s.P() > 2 * nr && s.P() <= kPanelsPerBlock * nr &&
         s.Mg() > kInPlaceBMaxRows && s.Mg() * s.K() * int64_t(sizeof(float)) >= kRowsShareBMinWBytes &&
         !reads_b_in_place(s, std::min(s.K(), kMaxKC), nr);
}

constexpr int64_t kHalfTailMaxPanels = 16;  // plan_conv: half-panel tails on maps this small

// K split (ConvPlan::k_parts): pointwise and 2-D windowed convs on small maps whose K
// gives each of the threads kKPartMinK rows or more, and is at least twice M. Split by
// pixels or rows of W, every worker read all of K for its pixels, half of which (on 2
// threads) the other worker's cache held: the depthwise conv before a projection writes
// its channel blocks split over the workers; the row chunks of a 3x3 conv each streamed
// the whole shared B (2 MB for resnet50's 3x3 256 at 14x14), half built by the other
// worker. Split by K, each worker reads (or builds) its own k-blocks over all pixels, W's
// row panels reused across all column panels as on one thread, into partial sums; then
// the workers add up their share of the partials (a pass over M x P floats per part,
// hence K >= 2 M: with resnet50's 512 -> 2048 at 7x7, 256 rows a part, it lost 5 %).
// Xeon (AVX-512), 2 threads, one layer with its input written by channel halves, median
// of 1000 interleaved runs: 576 -> 96 at 14x14 85-88 us against 110-118 (row or column
// split), 384 -> 64 39 against 57, 512 -> 64 at 13x13 51 against 69, 384 -> 48 41 against
// 55; 192 -> 64 (96 rows a part) no faster. In the models (per-node medians of 3
// alternating `--profile` runs, 2 threads): resnet50's 1x1 1024 -> 256 at 14x14 0.90-0.91x
// the time, its 3x3 256 at 14x14 (stride 2) 0.87x and 512 at 7x7 0.90-0.93x; resnet18's
// 3x3 128 -> 256 stride 2 0.81x, 512 at 7x7 0.91-0.92x.
//
// Whether it pays on larger maps depends on how X was written. Where a depthwise conv
// wrote it (by channel blocks, one share per worker), each worker's K range is mostly
// what it wrote itself: mobilenet_v2 at 2 threads (per-node medians of 3 alternating
// runs) 96 / 144 -> 24 at 56x56 0.78-0.83x the time, 144 / 192 -> 32 at 28x28
// 0.76-0.84x, 192 -> 64 at 14x14 0.86x, and the depthwise convs reading their outputs
// 0.85-0.93x; 2.5-3.3 % of the model's time. Where a GEMM conv wrote X split by pixels,
// it lost: squeezenet1_1's 256 -> 32 at 27x27 1.20x, resnet50's 256 -> 64 at 56x56
// 1.09x (one layer with X written by pixel halves, 1000 interleaved runs: 256 -> 32 at
// 27x27 88 us against 78, 192 -> 32 at 28x28 64 against 58). Hence the depthwise
// producer's hint (ConvPacked::set_input_by_channels, from mn_kernel.set_producer), and
// partial sums of at most kKPartsMaxFloats (L2-resident with the worker's K range of X).
constexpr int64_t kKPartMinK = 192, kKPartsMaxPixels = 256;
constexpr int64_t kKPartMinKByChannels = 32, kKPartsMaxFloats = 128 * 1024;
int64_t k_parts_for(const ConvShape& s, int threads, bool input_by_channels) {
  if (threads < 2 || threads > kConvMaxKParts || !(s.pointwise() || window_applies(s)) || s.N * s.group != 1 ||
      s.K() < 2 * s.M)
    return 1;
  if (s.P() <= kKPartsMaxPixels && s.K() >= threads * kKPartMinK) return threads;
  if (input_by_channels && s.pointwise() && s.K() >= threads * kKPartMinKByChannels && s.M * s.P() <= kKPartsMaxFloats)
    return threads;
  return 1;
}

// The shared B of a plan whose one column block holds all P pixels: k-blocks of kc rows
// by P rounded up to panels, each followed by its dot columns.
void set_shared_b(const ConvShape& s, ConvPlan& p) {
  const int64_t nr = gemm_nr();
  p.shared_dot_off = p.kc * ((s.P() + nr - 1) / nr * nr);
  p.shared_block = p.shared_dot_off + p.dot_cols * p.kc;
  p.k_blocks = (s.K() + p.kc - 1) / p.kc;
  p.shared_b_floats = p.k_blocks * p.shared_block;
}

}  // namespace

ConvPlan plan_conv(const ConvShape& s, int threads, bool input_by_channels) {
  ConvPlan p;
  const int64_t nr = gemm_nr();
  const int64_t K = s.K(), P = s.P();
  // With 16-wide panels (AVX2), K blocks up to 1024 deep while the B block stays within
  // kDeepKcBBytes: each further k-block re-reads and re-writes all of C, and a C larger
  // than L2 (1x1 512 -> 1024 at 14x14: 800 KB) then comes from L3 every time. Zen 3, one
  // layer, 15 alternating runs: KC 512, 1x1 512 -> 1024 at 14x14 0.84x the time,
  // 512 -> 2048 at 7x7 0.83x, 320 -> 1280 at 7x7 0.91x, 960 -> 320 at 7x7 0.92-0.95x,
  // 3x3 128 at 28x28 0.95x, others unchanged; KC 1024, 1x1 1024 -> 256 at 14x14 0.91x.
  //
  // With 32-wide panels (AVX-512) only on maps of at most kDeepMaxPanels panels (7x7: a
  // C of 100 KB at 512 rows, 18 k-blocks of 256 for resnet's 3x3 512). On several threads
  // (either width) no fewer k-blocks than workers (at most one per 256 rows of K), as a B
  // the row chunks share is built one k-block per task (conv_gemm_build_b): built as one
  // block on one worker, resnet50's 1x1 stride-2 1024 -> 2048 at 7x7 took 1.3x the time
  // at 2 threads. Zen 5, in-process A/B against KC 256 (bench/inproc_ab, 20 blocks of 10 runs,
  // 1 / 2 threads): resnet18 0.984x / 0.966x the time (its 7x7 3x3 layers 0.94-0.96x /
  // 0.89x), resnet50 0.993x / 0.990x (7x7 layers 0.94-0.97x / 0.94-0.96x), mobilenet_v2
  // 0.992x / 0.994x (320 -> 1280 and 960 -> 320 at 7x7 0.88-0.90x / 0.93x); one 3x3 512
  // at 7x7 alone: KC 512-1536 0.93-0.94x, 256 against one k-block of 4608 0.97x. On
  // larger maps the deeper blocks lost: resnet50's 3x3 stride-2 256 at 14x14 1.03x.
  const int64_t block_cols = std::min(P, kPanelsPerBlock * nr);
  const bool deep = nr == 16 || (nr >= 32 && P <= kDeepMaxPanels * nr);
  const int64_t max_kc =
      !deep ? kMaxKC
            : std::max(kMaxKC, std::min(kDeepMaxKC, kDeepKcBBytes / (block_cols * int64_t(sizeof(float)))));
  int64_t kchunks = (K + max_kc - 1) / max_kc;
  if (deep && threads > 1)
    kchunks = std::max<int64_t>(kchunks, std::min<int64_t>(threads, (K + kMaxKC - 1) / kMaxKC));
  // Pointwise convs with at most 32 output channels on AVX2 whose rows do not spread over
  // L1 (112x112 and 56x56 maps): K blocks small enough that they do (4 rows a set), so B
  // is read from X in place (conv_gemm_task) instead of copied; each extra k-block
  // re-reads a C block of at most 32 rows, which stays in L1 / L2. Zen 3, one layer, 21
  // alternating runs (1 / 2 threads): 32 -> 16 at 112x112 0.80-0.84x / 0.75-0.77x the
  // time, 96 -> 24 at 56x56 0.82x / 0.83-0.88x, 144 -> 24 0.82-0.96x / 0.86-0.87x,
  // 64 -> 32 at 56x56 0.90x (2 threads); with 64 rows (256 -> 64 at 56x56) 1.11x.
  // With 32-wide panels (AVX-512) only where X's rows fall on at most 4 set pairs (row
  // strides a multiple of 1 KB: mobilenet_v2's 32 -> 16 at 112x112, whose 32-row
  // strips filled all 8 ways of those sets): Zen 4, one layer, 101 alternating runs,
  // 0.72-0.83x the time at 1 thread, 0.92x at 2; in the model (per-node minimums of 4
  // alternating `--profile` runs) 302 -> 239 us at 1 thread, 132 -> 104 at 2. On 56x56
  // maps (16 set pairs: 96 -> 24, 144 -> 24) the layer alone gained 0.85-0.93x at 1
  // thread, but not at 2 (1.0-1.09x) nor in the model (1.08x), so they keep one k-block.
  // Not for tall tiles (13-16 or 29-32 rows on AVX-512): they read each B strip once,
  // nothing of it needs to stay in L1, and one k-block writes C once. Zen 4, 32 -> 16 at
  // 112x112 in mobilenet_v2, per-node medians of 6 alternating runs of two builds, both
  // orders: tall tiles with the split 0.89-0.92x the time of 6-row tiles, without 0.79-0.85x.
  const bool tall = s.group == 1 && gemm_tall_pays(s.Mg());
  if ((nr == 16 || (nr >= 32 && l1_sets_of_rows(P) <= 4)) && s.pointwise() && s.Mg() <= 32 && !tall) {
    const int64_t spread_kc = kSpreadRowsPerSet * l1_sets_of_rows(P);  // rows_spread's limit
    kchunks = std::max(kchunks, (K + spread_kc - 1) / spread_kc);
  }
  // With 32-wide strips, pointwise convs that read B in place where its rows spread (up
  // to 96 rows of W, or more with X's rows on cache lines: gemm_task) but whose K puts
  // more than kInPlaceWideRowsPerSet rows in an L1 set (56x56 maps: 16 sets, 256 rows):
  // K blocks that keep within it, read in place, instead of one copied. Zen 5, in-process
  // A/B (bench/inproc_ab, 20 blocks of 10 runs, 1 / 2 threads, two runs each): resnet50's
  // 256 -> 64 at 56x56 0.87-0.90x / 0.86-0.88x the time, 256 -> 128 0.93-0.95x; the model
  // 0.993x / 0.991-0.996x; mobilenet_v2 (no such layers) unchanged.
  if (nr >= 32 && s.pointwise() && !tall && in_place_rows_of_w(s.Mg(), P, nr)) {
    const int64_t wide_kc = kInPlaceWideRowsPerSet * l1_sets_of_rows(P);
    kchunks = std::max(kchunks, (K + wide_kc - 1) / wide_kc);
  }
  // A K split takes whole k-blocks per part, and the single-thread plan within each.
  const int64_t k_parts = k_parts_for(s, threads, input_by_channels);
  if (k_parts > 1) {
    kchunks = (kchunks + k_parts - 1) / k_parts * k_parts;
    threads = 1;
  }
  p.kc = (K + kchunks - 1) / kchunks;
  const int64_t panels = (s.Mg() + kGemmMR - 1) / kGemmMR;
  const int64_t col_panels = (P + nr - 1) / nr;
  const int64_t images = s.N * s.group;
  // Cache blocks of NC = 8 NR columns, one task each, when there are plenty of them for
  // the threads. Otherwise (late, small feature maps with 2+ threads) the split that
  // finishes first by plan_time: narrower column blocks (down to 2 panels; each block's B
  // is built once, but each streams all of W) and / or row chunks (each streams a part
  // of W, but rebuilds its column block's B). Splitting rows 4 ways per thread rebuilt
  // im2col 8 times on resnet's 7x7 layers, where 2 threads then barely beat one.
  //
  // Small K (first convs, pointwise convs from few channels): blocks wider than 8 panels,
  // doubled while B stays within kRowsOuterMaxBytes (row panels outer, see
  // conv_gemm_task) and there are still 8 blocks per thread. Their output rows are written
  // in longer runs (a row panel's six rows, NC floats each) and each block's start-up is
  // paid less often. Zen 3 (AVX2), one layer, input freshly written, other data evicted,
  // 21 alternating runs: 16 -> 96 at 112x112 0.85x the time, the 3x3 stride-2 first convs
  // (K = 27) 0.84-0.85x, 24 -> 144 at 56x56 0.85x, 32 -> 16 at 112x112 0.95x; B blocks of
  // 128 KB (MC blocking instead of row panels outer) were 1.5-2x slower.
  int64_t ppb = kPanelsPerBlock, ppc = panels;
  while (2 * ppb * nr * p.kc * int64_t(sizeof(float)) <= kRowsOuterMaxBytes &&
         images * ((col_panels + 2 * ppb - 1) / (2 * ppb)) >= 8 * int64_t(threads))
    ppb *= 2;
  const int64_t blocks = (col_panels + ppb - 1) / ppb;
  if (threads > 1 && rows_share_b(s)) {  // one column block; the chunks are set below
    ppb = kPanelsPerBlock;
    ppc = (panels + threads - 1) / threads;
  } else if (threads > 1 && images * blocks < 8 * int64_t(threads)) {
    double best = plan_time(s, kPanelsPerBlock * nr, panels, threads);
    for (int64_t b : {kPanelsPerBlock, int64_t(6), int64_t(4), int64_t(3), int64_t(2)})
      for (int64_t m = 1; m <= std::min<int64_t>(panels, 2 * int64_t(threads)); ++m) {
        const int64_t c = (panels + m - 1) / m;
        const double t = plan_time(s, b * nr, c, threads);
        if (t < best * 0.999) {
          best = t;
          ppb = b;
          ppc = c;
        }
      }
  }
  p.nc = nr * ppb;
  p.col_blocks = (P + p.nc - 1) / p.nc;
  p.panels_per_chunk = ppc;
  p.m_chunks = (panels + ppc - 1) / ppc;
  p.tasks = images * p.col_blocks * p.m_chunks;
  p.slot_floats = p.kc * p.nc + 4 * p.nc;  // packed block + im2col's pixel table
  if (window_applies(s)) p.slot_floats += p.kc + window_floats(s, p.kc, p.nc);  // offsets, window
  // A tail panel of t < NR pixels costs a whole MR x NR tile per row panel; as dot products
  // (DotTile) it costs about its own t columns. Up to NR / 4 (Zen 3, AVX2, one layer at a
  // time, median of 15 alternating runs): 7x7 maps (49 = 3 * 16 + 1) 1x1 2048-512 59 -> 73,
  // 512-2048 62 -> 78, 3x3 512 52 -> 60 GFLOP/s; 14x14 (196 = 12 * 16 + 4) 75 -> 78. A tail
  // of 9 (13x13) was no faster, and a map of fewer than NR pixels all as dots (3x3: P = 9)
  // 2x slower.
  const int64_t tail = P % nr;
  if (tail > 0 && tail <= gemm_dot_tail_max(nr)) {
    p.dot_cols = tail;
  } else if (gemm_half_tail_dots(tail, nr) > 0 && P <= kHalfTailMaxPanels * nr) {
    // A tail a little over half a panel (7x7 maps: 49 = 32 + 17 with 32-wide panels) as a
    // one-vector tile of NR / 2 columns (gemm_tile_fn) and dot columns for the rest, instead
    // of a whole NR-wide tile: Zen 4 (AVX-512), one layer, 21 alternating runs, 3x3 512 at
    // 7x7 0.81x the time, 1x1 512 -> 2048 0.78x, 2048 -> 512 0.84x, 960 -> 320 0.84x,
    // 160 -> 960 0.78x. On large maps the tail is a sliver of the work and the dots only
    // cost (55x55 16 -> 64 and 128 -> 16: 1.03-1.09x), hence kHalfTailMaxPanels.
    p.dot_cols = gemm_half_tail_dots(tail, nr);
  }
  if (p.dot_cols > 0) {
    p.dot_off = p.slot_floats;
    p.slot_floats += p.dot_cols * p.kc;
  }
  // One column block split into row chunks (small maps on several threads: resnet's 7x7
  // layers) had every chunk build the same B: built once instead, its k-blocks spread
  // over the workers (conv_gemm_build_b), then read by all chunks. Zen 4, 2 threads,
  // per-node minimums of alternating profiles: see ConvPacked::run.
  //
  // With B shared, a row chunk no longer rebuilds it (what plan_time charges each chunk),
  // so such plans take at least two chunks per worker: the worker that finishes first
  // takes the other's last one. Two vCPUs of this guest often run at different speeds for
  // minutes, and one chunk each left the faster idle for up to a fifth of the layer.
  // Zen 5, 2 threads, per-node minimums / medians of 8 alternating `--profile` runs:
  // resnet18's 3x3 7x7 layers 0.96-1.03x / 0.94-0.98x the time (its 1x1 stride-2 one,
  // 65 us, 1.07x / 1.04x; whole model median 0.99x), resnet50's 0.79-0.88x / 0.97-0.99x;
  // four chunks a worker were slower than two.
  if (p.m_chunks > 1 && images * p.col_blocks == 1 && (!s.pointwise() || rows_share_b(s))) {
    constexpr int64_t kSharedChunksPerWorker = 2;
    p.panels_per_chunk = std::min(p.panels_per_chunk, std::max<int64_t>(1, (panels + kSharedChunksPerWorker * threads - 1) /
                                                                               (kSharedChunksPerWorker * threads)));
    p.m_chunks = (panels + p.panels_per_chunk - 1) / p.panels_per_chunk;
    p.tasks = images * p.col_blocks * p.m_chunks;
    set_shared_b(s, p);
  }
  if (k_parts > 1) {
    p.k_parts = k_parts;
    p.part_k = p.kc * (kchunks / k_parts);
    p.tasks = k_parts;
  }
  return p;
}

int64_t conv_shared_b_floats(const ConvShape& s) {
  // A plan shares B only with one column block holding every pixel, which several workers
  // get only from the split search (blocks of at most kPanelsPerBlock panels), one image,
  // a B to build and more than one row panel. Its size depends on kc and dot_cols alone;
  // kc on the thread count where deep k-blocks are split for the workers (plan_conv): the
  // most over the counts.
  const int64_t nr = gemm_nr();
  if (s.N * s.group != 1 || (s.pointwise() && !rows_share_b(s)) || s.P() > kPanelsPerBlock * nr || s.Mg() <= kGemmMR)
    return 0;
  int64_t most = 0;
  for (int t = 1; t <= kConvMaxSlots; ++t) {
    ConvPlan p = plan_conv(s, t);
    set_shared_b(s, p);
    most = std::max(most, p.shared_b_floats);
  }
  return most;
}

namespace {

// conv_gemm_task (build_b null): B built in the slot, or read from shared_b (the run's
// shared B blocks, plan.shared_b_floats) when that is not null. conv_gemm_build_b
// (build_b not null): only k-block build_kb's B built, into build_b's blocks.
void gemm_task(const ConvShape& s, const ConvWeights& w, const float* w_rows, const ConvPlan& p,
               int64_t t, const float* x, float* y, float* slot, float lo, float hi,
               const float* addend, const float* shared_b, float* build_b, int64_t build_kb,
               int64_t k_begin, int64_t k_end, int64_t panel_begin = -1, int64_t panel_end = -1) {
  // Column blocks vary fastest: the workers take contiguous runs of tasks (run_in_slots),
  // and with the row chunk fastest a run of two tasks was one column block's two chunks,
  // so with a narrow last block one worker got both wide tasks and the other both narrow
  // ones (1x1 256 -> 1024 at 14x14, blocks of 128 and 68 pixels, two chunks: Zen 4, 2
  // threads, `--profile` per-node minimums 730-740 -> 577-613 us).
  const int64_t cb = t % p.col_blocks;
  const int64_t mc = (t / p.col_blocks) % p.m_chunks;
  const int64_t g = (t / (p.m_chunks * p.col_blocks)) % s.group;
  const int64_t n = t / (p.m_chunks * p.col_blocks * s.group);
  const int64_t K = s.K(), P = s.P(), Mg = s.Mg(), Cg = s.Cg();
  const int64_t nr = gemm_nr();
  const TileFn tile_fn = gemm_tile_fn(), tall_fn = gemm_tall_tile_fn();
  const int64_t j0 = cb * p.nc, j1 = std::min(P, j0 + p.nc), cols = j1 - j0;
  // The task's row chunk, or the row panels the caller gave (conv_gemm_rows).
  const int64_t pi0 = panel_begin >= 0 ? panel_begin : mc * p.panels_per_chunk;
  const int64_t pi1 = panel_begin >= 0 ? panel_end : std::min((Mg + kGemmMR - 1) / kGemmMR, pi0 + p.panels_per_chunk);
  // A(i, k) of this group: packed panel p at a + p * K * MR (a_rs 1, a_cs MR), or W's
  // row i at a + i * K (a_rs K, a_cs 1).
  const float* a = w.in_place ? w_rows + g * Mg * K : w.groups[size_t(g)].data.get();
  const float* xg = x + (n * s.C + g * Cg) * s.Pin();
  float* yg = y + (n * s.M + g * Mg) * P;
  // An addend that is y itself (its memory reused for the output) is already in C. With
  // one k-block the epilogue reads it from C before storing there, as it would read it from
  // elsewhere (same sums, same rounding). With several, the first k-block's partial sums
  // would overwrite it before the last one adds it: every k-block accumulates onto it
  // instead (beta 1; the addend is then summed first, a different rounding).
  const bool onto_addend = addend == y && p.kc < K;
  const float* rg = addend && !onto_addend ? addend + (n * s.M + g * Mg) * P : nullptr;
  const bool direct = s.pointwise();
  const bool windowed = window_applies(s);
  const bool subsampled = subsample_applies(s);
  // Whether this task builds its B (and the tables that do), or reads the shared B.
  const bool build = !shared_b;
  int32_t* sub_tab = reinterpret_cast<int32_t*>(slot + p.kc * p.nc);
  if (subsampled && build) subsample_offsets(s, j0, cols, sub_tab);
  const WindowGeom wg = windowed && build ? window_geom(s, j0, j1) : WindowGeom{};
  const WindowRuns runs = windowed && build ? window_runs(s, wg, j0, cols, nr,
                                                          reinterpret_cast<int32_t*>(slot + p.kc * p.nc))
                                            : WindowRuns{};

  const bool build_only = build_b != nullptr;
  for (int64_t k0 = build_only ? build_kb * p.kc : k_begin; k0 < k_end; k0 += p.kc) {
    const int64_t kc = std::min(p.kc, k_end - k0);
    // This k-block's B panels and dot columns: built at bw / btw (the slot, or the shared
    // block being built), read at bb / bt (the shared block when given one).
    float* bw = build_only ? build_b + k0 / p.kc * p.shared_block : slot;
    float* btw = build_only ? bw + p.shared_dot_off : slot + p.dot_off;
    const float* bb = build ? bw : shared_b + k0 / p.kc * p.shared_block;
    const float* bt = build ? btw : bb + p.shared_dot_off;
    // B in panel layout, [NR-column panel][kc][NR]: each tile reads one contiguous,
    // aligned kc x NR strip. (Reading a 1x1 conv's X in place was measured slower: its rows
    // start mid cache line, and power-of-two row strides map a strip onto a few L1 sets.)
    // Pointwise convs with few output channels read their B panels from X in place (the
    // rows of X are B's rows), all but a partial last panel: the copy costs as much per
    // float as the GEMM does with Mg rows of W when Mg is small. On the Xeon (AVX-512;
    // one layer, X just written, W cold, 11 alternating runs) 128 -> 16 at 55x55 1.79x,
    // 144 -> 24 at 56x56 1.37x, 32 -> 16 at 112x112 1.21x, 384 -> 64 at 14x14 1.22x, but
    // 576 -> 96 0.86x and 16 -> 96 0.89x; in the models (alternating runs of the whole
    // model) mobilenet_v2's projections 1.1-1.4x, squeezenet1_1's squeeze convs 1.05-1.3x.
    // On the Zen 3 (AVX2, NR 16) in place was slower where X's rows map onto few L1 sets
    // (row strides of 64-byte multiples with a large power of two in them: 32 -> 16 at
    // 112x112 595 vs 491 us, 144 -> 24 at 56x56 1.3-1.45x the time): there it copies
    // (rows_spread). Elsewhere, with the next strip's rows prefetched on the first row
    // panel's pass (one layer, input just written, 21 alternating runs): 192 -> 32 at
    // 28x28 0.80-0.87x, 128 -> 16 at 55x55 0.71-0.81x, 256 -> 32 at 27x27 0.84-0.91x,
    // 384 -> 64 at 14x14 0.85-0.92x, 1024 -> 64 at 4x4 0.77x, and with 96 rows of W
    // 576 -> 96 and 384 -> 96 at 14x14 0.91-0.93x (2 threads: unchanged); with 160
    // (960 -> 160 at 7x7) the copy is amortised and in place lost (1.2x). On the Zen 4
    // (AVX-512) 96 rows in place too (the Xeon's limit was 64): mobilenet_v2's 576 -> 96
    // and 384 -> 96 at 14x14, per-node minimums of 6 alternating `--profile` runs of two
    // builds, 0.92-0.97x at 1 thread in both orders, 0.98-0.99x at 2. With 32-wide
    // strips too, rows that put more than 12 lines in an L1 set are copied (resnet50's 256
    // -> 64 at 56x56: 16 a set; Xeon, per-node medians of 3 alternating runs, 0.90-0.93x
    // the time), fewer stay in place (mobilenet_v2's 144 -> 24 at 56x56, 9 a set).
    // Where those rows also start on cache lines (in_place_rows_of_w), more than 96 rows
    // of W read them in place too: the strips are read whole lines at a time, and copying
    // B was a pass of its own over X. Zen 5, in-process A/B (bench/inproc_ab, 20 blocks of
    // 10 runs, 1 / 2 threads, two runs each): resnet50's 512 -> 128 at 28x28 0.93-0.94x /
    // 0.88-0.90x the time, 128 -> 512 unchanged / 0.86-0.89x, 512 -> 256 0.96x / 0.94x; the
    // model 0.995x / 0.983-0.989x; mobilenet_v2 and resnet18 (no such layers) unchanged.
    const bool b_in_place = reads_b_in_place(s, kc, nr);
    const int64_t whole_cols = cols / nr * nr;  // in place: the panels of NR whole columns
    if (!build) {
      // Built by conv_gemm_build_b.
    } else if (direct) {
      for (int64_t kk = 0; kk < kc; ++kk) {
        const float* src = xg + (k0 + kk) * P + j0;
        for (int64_t jq = b_in_place ? whole_cols : 0; jq < cols; jq += nr) {
          float* o = bw + jq * kc + kk * nr;
          // memcpy, not a loop: this file is built for the baseline ISA, where the loop
          // became 16-byte SSE moves (2 % of mobilenet_v2's time); glibc's memcpy uses
          // the CPU's widest moves.
          std::memcpy(o, src + jq, size_t(std::min(nr, cols - jq)) * sizeof(float));
        }
      }
    } else if (subsampled) {
      subsample_block(s, xg, sub_tab, k0, kc, cols, nr, bw);
    } else if (windowed) {
      const int64_t taps = s.taps(), c0 = k0 / taps, c1 = (k0 + kc - 1) / taps + 1;
      int32_t* boff = reinterpret_cast<int32_t*>(slot + p.kc * p.nc + 4 * p.nc);
      float* win = slot + p.kc * p.nc + 4 * p.nc + p.kc;
      window_rows(s, xg, c0, c1, wg, win);
      window_block(s, win, c0, wg, runs, k0, kc, cols, nr, bw, boff);
    } else {
      im2col_block(s, xg, k0, kc, j0, cols, nr, bw,
                   reinterpret_cast<int32_t*>(slot + p.kc * p.nc));
    }
    // The tail pixels' B columns, transposed for the dot tiles: bt[j][kk].
    const bool dot_tail = w.in_place && p.dot_cols > 0 && j1 == P;
    const int64_t full_cols = dot_tail ? cols - p.dot_cols : cols;
    if (dot_tail && build) {
      // The last panel, [kc][nr]; the dot columns start `off` into it (past a half tile).
      const int64_t pq = full_cols / nr * nr, off = full_cols - pq;
      const float* panel = bw + pq * kc;
      for (int64_t j = 0; j < p.dot_cols; ++j)
        for (int64_t kk = 0; kk < kc; ++kk) btw[j * kc + kk] = panel[kk * nr + off + j];
    }
    if (build_only) return;
    Epilogue e;
    e.bias_per_row = true;
    e.beta = k0 > k_begin || onto_addend ? 1.0f : 0.0f;
    const bool last = k0 + kc >= k_end;  // the last k-block finishes: addend, clamp
    if (last) {
      e.lo = lo;
      e.hi = hi;
    }
    Tile tile;
    tile.K = kc;
    tile.a_rs = w.in_place ? K : 1;
    tile.a_cs = w.in_place ? 1 : kGemmMR;
    tile.ldb = nr;
    tile.ldc = P;
    // W in blocks of kMcPanels row panels (MC x KC, ~100 KB, stays in L2); within one,
    // the B strip (kc x NR) is outer: it stays in L1 while the W panels stream from L2.
    // When the whole B block is small (small K), one row panel at a time instead: its
    // tiles then write each output row's NC floats one after another, six write streams
    // rather than MC = 96, which the prefetchers follow. Zen 3, one layer with its input
    // freshly written and its output and weights evicted (as in a model; 11 alternating
    // runs, GFLOP/s): mobilenet_v2's 16 -> 96 at 112x112 9.8 -> 22.5, 32 -> 16 at 112x112
    // 14.0 -> 18.5, 24 -> 144 at 56x56 23.7 -> 27.5, squeezenet1_1's 16 -> 64 at 55x55
    // 10.6 -> 19.2 and first conv (3x3 s2, K = 27) 13.5 -> 28.0; layers with larger blocks
    // unchanged (a chain of mobilenet_v2's first layers, input written by the one before:
    // 16 -> 96 3222 -> 1268 us, 24 -> 144 1310 -> 588 us).
    // Tall tiles (gemm.h): 16 rows at a time per half panel, the B strip read once or twice
    // rather than once per 6 rows. Zen 4, per-node medians of 6-8 alternating `--profile`
    // runs of two builds in both orders (1 / 2 threads): mobilenet_v2's 32 -> 16 at 112x112
    // 0.79-0.85x / 0.97x the time, 144 / 192 -> 32 at 28x28 0.95-0.98x / 0.92-0.99x;
    // squeezenet1_1's 64 -> 16 at 55x55 ~0.85x / 0.82-0.87x, 128 / 256 -> 32 at 27x27
    // ~0.92x / 0.86-0.93x (against unchanged layers). With a last tile of 8 rows (24
    // channels: 16 + 8, half its FMAs on zero rows) 1.14-1.25x: gemm_tall_pays.
    const bool tall = b_in_place && w.tall && p.m_chunks == 1;
    // A last column panel of at most NR / 2 columns (7x7 maps: 49 = 32 + 16 + a dot
    // column; 13x13: 169 = 5 * 32 + 9) with W read in place: two row panels per tile
    // there (gemm.h, 12 x one vector), so row panels go at least two at a time.
    const bool pair_half = w.in_place && !tall && full_cols % nr != 0 && full_cols % nr <= nr / 2;
    const int64_t mcp = tall ? pi1 - pi0
                        : kc * cols * int64_t(sizeof(float)) <= kRowsOuterMaxBytes ? (pair_half ? 2 : 1)
                                                                                    : kMcPanels;
    int64_t dot_r0 = pi0 * kGemmMR;  // first row the dot tiles have not done yet
    for (int64_t pb = pi0; pb < pi1; pb += mcp) {
      for (int64_t jq = 0; jq < full_cols; jq += nr) {
        tile.b = bb + jq * kc;  // panel q starts at q * kc * NR
        tile.ldb = nr;
        if (b_in_place && jq < whole_cols) {
          tile.b = xg + k0 * P + j0 + jq;
          tile.ldb = P;
          if (pb == pi0 && jq + nr < whole_cols)  // the next strip, on the first pass
            for (int64_t kk = 0; kk < kc; ++kk) __builtin_prefetch(tile.b + kk * P + nr, 0, 3);
        }
        tile.nr = static_cast<int>(std::min(nr, full_cols - jq));
        if (tall) {
          for (int64_t r0 = 0; r0 < Mg; r0 += kGemmTallRows)
            for (int64_t h = 0; h < tile.nr; h += nr / 2) {
              Tile tt = tile;
              tt.b = tile.b + h;
              tt.nr = static_cast<int>(std::min<int64_t>(nr / 2, tile.nr - h));
              tt.a = w.tall.get() + (r0 * K + k0 * kGemmTallRows);
              tt.mr = static_cast<int>(std::min<int64_t>(kGemmTallRows, Mg - r0));
              tt.c = yg + r0 * P + j0 + jq + h;
              e.bias = (k0 == 0 && w.bias) ? w.bias.get() + r0 : nullptr;
              e.addend = last && rg ? rg + r0 * P + j0 + jq + h : nullptr;
              if (k0 == k_begin) prefetch_tile_rows(tt.c, P, tt.mr, tt.nr, true);
              if (e.addend) prefetch_tile_rows(e.addend, P, tt.mr, tt.nr, false);
              tall_fn(tt, e);
            }
          continue;
        }
        const int64_t pe = std::min(pi1, pb + mcp);
        for (int64_t pi = pb; pi < pe; ++pi) {
          const int64_t i0 = pi * kGemmMR;
          // pair_half: W in place; the rows this block still has (pe's panels, Mg's rows)
          const int64_t rows_left = std::min(pe * kGemmMR, Mg) - i0;
          // The first column panel of a block brings each row panel of W in from memory
          // (the others find it in L2): the next row panel's rows are prefetched into L2
          // meanwhile. In a model W streams from DRAM (resnet50's 7x7 layers read 60 MB
          // once per run); with caches flushed before each run (Xeon, AVX-512, 9
          // alternating runs): 3x3 512 at 7x7 2.94 -> 2.54 ms, 1x1 512 -> 2048 at 7x7
          // 1.49 -> 1.28 ms, 14x14 layers 4-12 % faster, larger maps unchanged.
          tile.a = w.in_place ? a + i0 * K + k0 : a + (pi * K + k0) * kGemmMR;
          tile.mr = pair_half ? gemm_tile_rows(tile.nr, nr, rows_left) : static_cast<int>(std::min<int64_t>(kGemmMR, Mg - i0));
          const bool pf_next = jq == 0 && w.in_place && pi + 1 < pi1;
          // Spread through the tile's K loop where the tile takes it (tile.pf: a full
          // two-vector 6-row tile with rows of 128+ floats), else all before the tile.
          // Before the tile, 6 x kc / 16 prefetches at once filled the miss buffers and
          // stalled (resnet50 on a Xeon with AVX-512, `perf`: 78 % of gemm_task's own
          // samples on them). Spread, per-node medians of 3 alternating `--profile` runs
          // at 1 thread: 1x1 at 7x7 0.81-0.86x the time, 3x3 at 7x7 0.91x, 14x14 layers
          // 0.91-0.97x, the model 0.95x (bench/ab.sh 7 rounds: 0.957x at 1 thread,
          // 0.965x at 2; resnet18 0.973x / 0.977x). At K = 64 it was 1.03-1.09x slower,
          // hence kPrefetchInTileMinK.
          const bool pf_in_tile = pf_next && tile.mr == kGemmMR && tile.nr == nr && kc >= kPrefetchInTileMinK;
          const float* next = pf_next ? a + (i0 + kGemmMR) * K + k0 : nullptr;
          const int next_rows = pf_next ? static_cast<int>(std::min<int64_t>(kGemmMR, Mg - i0 - kGemmMR)) : 0;
          tile.pf = pf_in_tile ? next : nullptr;
          tile.pf_rows = pf_in_tile ? next_rows : 0;
          if (pf_next && !pf_in_tile) prefetch_rows(next, K, next_rows, kc);
          e.bias = (k0 == 0 && w.bias) ? w.bias.get() + g * Mg + i0 : nullptr;
          tile.c = yg + i0 * P + j0 + jq;
          e.addend = last && rg ? rg + i0 * P + j0 + jq : nullptr;
          // The tile's rows of C (first written here, k0 == k_begin) and of a fused addend (read
          // in the epilogue) are usually not in cache (a model's tensors outgrow L2): their
          // lines are fetched while the tile's K loop runs, instead of each store or load
          // of the epilogue waiting for one. Zen 3, one layer, 21 alternating runs: 1x1
          // 256 -> 1024 at 14x14 with an addend 0.76-0.79x, without 0.85-0.88x, 128 -> 512
          // at 28x28 0.90-0.94x, 64 -> 256 at 56x56 with an addend 0.88-0.91x, 3x3 layers
          // 0.91-1.0x.
          if (k0 == k_begin) prefetch_tile_rows(tile.c, P, tile.mr, tile.nr, true);
          if (e.addend) prefetch_tile_rows(e.addend, P, tile.mr, tile.nr, false);
          tile_fn(tile, e);
          if (tile.mr > kGemmMR) ++pi;
        }
      }
      // Every kMcPanels row panels (and at the end), the same rows of W against the tail
      // columns: pairs of columns 4 rows at a time, a last single column 8 rows at a time.
      const int64_t done = std::min(pi1, pb + mcp);
      if (!dot_tail || ((done - pi0) % kMcPanels != 0 && done < pi1)) continue;
      const int64_t r0 = dot_r0, r1 = std::min(Mg, done * kGemmMR);
      dot_r0 = r1;
      DotTile dt;
      dt.K = kc;
      dt.a_rs = K;
      dt.ldbt = kc;
      dt.ldc = P;
      gemm_dot_columns(dt, e, p.dot_cols, r0, r1, [&](int64_t j, int64_t i0, DotTile& d, Epilogue& de) {
        d.bt = bt + j * kc;
        d.a = a + i0 * K + k0;
        d.c = yg + i0 * P + j0 + full_cols + j;
        de.bias = (k0 == 0 && w.bias) ? w.bias.get() + g * Mg + i0 : nullptr;
        de.addend = last && rg ? rg + i0 * P + j0 + full_cols + j : nullptr;
      });
    }
  }
}

}  // namespace

void conv_gemm_task(const ConvShape& s, const ConvWeights& w, const float* w_rows,
                    const ConvPlan& p, int64_t t, const float* x, float* y, float* slot,
                    float lo, float hi, const float* addend, const float* shared_b) {
  gemm_task(s, w, w_rows, p, t, x, y, slot, lo, hi, addend, shared_b, nullptr, 0, 0, s.K());
}

void conv_gemm_rows(const ConvShape& s, const ConvWeights& w, const float* w_rows, const ConvPlan& p,
                    int64_t pi0, int64_t pi1, const float* x, float* y, float* slot, float lo, float hi,
                    const float* addend, const float* shared_b) {
  gemm_task(s, w, w_rows, p, 0, x, y, slot, lo, hi, addend, shared_b, nullptr, 0, 0, s.K(), pi0, pi1);
}

void conv_gemm_part(const ConvShape& s, const ConvWeights& w, const float* w_rows, const ConvPlan& p,
                    int64_t part, const float* x, float* partial, float* slot) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t k0 = part * p.part_k, k1 = std::min(s.K(), k0 + p.part_k);
  for (int64_t cb = 0; cb < p.col_blocks; ++cb)
    gemm_task(s, w, w_rows, p, cb, x, partial, slot, -inf, inf, nullptr, nullptr, nullptr, 0, k0, k1);
}

void conv_gemm_build_b(const ConvShape& s, const ConvWeights& w, const ConvPlan& p, int64_t kb,
                       const float* x, float* shared_b, float* slot) {
  gemm_task(s, w, nullptr, p, 0, x, nullptr, slot, 0.0f, 0.0f, nullptr, nullptr, shared_b, kb, 0, s.K());
}

void conv_ref(const ConvShape& s, const float* x, const float* w, const float* bias, float* y,
              float lo, float hi) {
  const int64_t Cg = s.Cg(), Mg = s.Mg(), taps = s.taps();
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.M; ++m) {
      const int64_t g = m / Mg;
      for (int64_t od = 0; od < s.out[0]; ++od)
        for (int64_t oh = 0; oh < s.out[1]; ++oh)
          for (int64_t ow = 0; ow < s.out[2]; ++ow) {
            double acc = bias ? bias[m] : 0.0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kd = 0; kd < s.k[0]; ++kd)
                for (int64_t kh = 0; kh < s.k[1]; ++kh)
                  for (int64_t kw = 0; kw < s.k[2]; ++kw) {
                    const int64_t id = od * s.s[0] - s.pb[0] + kd * s.d[0];
                    const int64_t ih = oh * s.s[1] - s.pb[1] + kh * s.d[1];
                    const int64_t iw = ow * s.s[2] - s.pb[2] + kw * s.d[2];
                    if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1] || iw < 0 ||
                        iw >= s.in[2])
                      continue;
                    const float xv =
                        x[(((n * s.C + g * Cg + c) * s.in[0] + id) * s.in[1] + ih) * s.in[2] + iw];
                    const float wv = w[(m * Cg + c) * taps + (kd * s.k[1] + kh) * s.k[2] + kw];
                    acc += double(xv) * wv;
                  }
            const float v = std::min(std::max(static_cast<float>(acc), lo), hi);
            y[(((n * s.M + m) * s.out[0] + od) * s.out[1] + oh) * s.out[2] + ow] = v;
          }
    }
}

void maxpool_ref(const ConvShape& s, const float* x, float* y) {
  for (int64_t pl = 0; pl < s.N * s.C; ++pl)
    for (int64_t oh = 0; oh < s.out[1]; ++oh)
      for (int64_t ow = 0; ow < s.out[2]; ++ow) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t kh = 0; kh < s.k[1]; ++kh)
          for (int64_t kw = 0; kw < s.k[2]; ++kw) {
            const int64_t ih = oh * s.s[1] - s.pb[1] + kh * s.d[1];
            const int64_t iw = ow * s.s[2] - s.pb[2] + kw * s.d[2];
            if (ih < 0 || ih >= s.in[1] || iw < 0 || iw >= s.in[2]) continue;
            const float v = x[(pl * s.in[1] + ih) * s.in[2] + iw];
            if (v > m || std::isnan(v)) m = v;
          }
        y[(pl * s.out[1] + oh) * s.out[2] + ow] = m;
      }
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
