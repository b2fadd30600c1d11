// Convolution kernels of cpu_dense, NCHW, 1-D to 3-D lifted to 3-D (leading spatial dims
// of size 1). Plain C++ interface (no plugin ABI), like kernels/gemm.h.
//
//  conv_gemm: per image and group, Y[Mg, P] = W[Mg, K] * B[K, P] with K = Cg * taps and
//    P = output pixels. W is packed once (PackedA). B is built per cache block of KC x NC
//    in the caller's scratch slot, in NR-column panels: tiled im2col, or for 1x1 stride-1
//    unpadded convs a plain copy of X's rows (no im2col).
//  dwconv: direct depthwise (Cg == 1, any multiplier), any kernel size, stride, dilation
//    and pads, 1-D/2-D. One output plane at a time: the input plane is copied into a
//    zero-padded scratch plane, its columns split by phase (column mod stride), so every
//    tap is a unit-stride SIMD load and the inner loop has no bounds checks.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/gemm.h"

namespace minnow {
namespace cpu_dense {
namespace kernels {

// One convolution's geometry for concrete shapes, 3 spatial axes (D, H, W).
struct ConvShape {
  int64_t N = 1, C = 1, M = 1, group = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
  int64_t Cg() const { return C / group; }
  int64_t Mg() const { return M / group; }
  int64_t taps() const { return k[0] * k[1] * k[2]; }
  int64_t K() const { return Cg() * taps(); }
  int64_t P() const { return out[0] * out[1] * out[2]; }
  int64_t Pin() const { return in[0] * in[1] * in[2]; }
  // B is X's rows: 1x1x1 kernel, stride 1, no padding (output == input grid).
  bool pointwise() const;
  bool operator==(const ConvShape& o) const {
    for (int i = 0; i < 3; ++i)
      if (in[i] != o.in[i] || out[i] != o.out[i] || k[i] != o.k[i] || s[i] != o.s[i] || d[i] != o.d[i] ||
          pb[i] != o.pb[i])
        return false;
    return N == o.N && C == o.C && M == o.M && group == o.group;
  }
};

// ---- GEMM convolution ---------------------------------------------------------------
// W is either read in place or packed into MR-row panels per group. The micro-kernel
// takes A through strides, and W's rows (OIHW: one output channel's K weights,
// contiguous) are already what it reads, so in place (the default) costs no prepare time
// and no memory: packing was most of resnet50's prepare time (first-touch page faults of
// 100 MB of fresh buffers), and per node it was not faster (resnet50, 1 thread, min of 3
// runs of per-node medians: the 1x1 and 3x3 convs that row strides of 1 KiB multiples
// might slow through L1 set conflicts took 90 ms in place against 103 ms packed, no node
// more than 8 % slower). Panels stay for the tests and for targets where they may pay.
enum class ConvPack { kInPlace, kPanels };

struct ConvWeights {
  int64_t M = 0, group = 1, K = 0;  // K per group
  bool in_place = false;             // true: `groups` is empty, W is read at run time
  std::vector<PackedA> groups;
  FloatBuf bias;  // [M] or null
  // W k-major for tall tiles (gemm_tall_tile_fn): a 1x1 kernel, one group, W read in place,
  // as many rows as gemm_tall_pays takes; else null. conv_gemm_task uses it for pointwise
  // convs (B read in place) run in one row chunk.
  FloatBuf tall;
};
// w: [M, K] (OIHW flattened), bias [M] or null. `one_by_one`: a 1x1 kernel (its W may
// also be packed for tall tiles).
ConvWeights pack_conv_weights(const float* w, int64_t M, int64_t K, int64_t group,
                              const float* bias, ConvPack how = ConvPack::kInPlace, bool one_by_one = false);

// How one run is split: tasks = N * group * row chunks * column blocks (task t: column
// block t % col_blocks, row chunk t / col_blocks % m_chunks, then group, then image).
// Or, with k_parts > 1 (a pointwise conv with a deep K on a small map, several threads:
// plan_conv's comment), K in k_parts ranges of part_k rows (whole k-blocks; the last may
// be shorter), one per worker: conv_gemm_part runs part j into its own partial sums over
// all pixels, f32_sum_clamp (eltwise.h) adds them up.
struct ConvPlan {
  int64_t nc = 0, kc = 0;         // cache block: NC columns (multiple of NR), KC rows
  int64_t col_blocks = 0, m_chunks = 1, panels_per_chunk = 0, tasks = 0;
  int64_t slot_floats = 0;        // scratch per concurrently running task
  // Pixels past the last whole NR panel (P % NR) when they go as dot products (gemm.h,
  // DotTile; W read in place only), else 0; their B columns sit at slot + dot_off.
  int64_t dot_cols = 0, dot_off = 0;
  // With shared_b_floats > 0 the tasks share one B (one column block in several row
  // chunks): k_blocks blocks of shared_block floats (panels, then the dot columns at
  // shared_dot_off), built by conv_gemm_build_b before the tasks run on it.
  int64_t shared_b_floats = 0, shared_block = 0, shared_dot_off = 0, k_blocks = 0;
  int64_t k_parts = 1, part_k = 0;  // part_k: K rows per part (k_parts > 1)
};
constexpr int kConvMaxKParts = 4;  // the most parts (threads) a K split takes
// `threads`: how many workers will take tasks (more row chunks when columns are few).
// `input_by_channels`: X is written split by channels over the threads (a depthwise
// conv wrote it): a K split also pays on larger maps (conv_gemm.cc, k_parts_for).
ConvPlan plan_conv(const ConvShape& s, int threads, bool input_by_channels = false);
// The shared_b_floats a plan of s has with any number of workers (0 where none shares B):
// what scratch must hold for it, without planning for every thread count.
int64_t conv_shared_b_floats(const ConvShape& s);
// Most scratch slots a run uses (one per concurrently running group of tasks).
constexpr int kConvMaxSlots = 16;

// Runs task `t` of the plan: y[N, M, P] for one (image, group, column block, row chunk).
// `slot` has plan.slot_floats floats, used by this task alone. lo/hi: the output clamp.
// `w_rows`: W [M, K] as given at run time, read when w.in_place (may be null otherwise).
// `addend`: null, or [N, M, P] added to y before the clamp (a fused residual Add). It may
// be y itself (the residual's memory reused for the output): y's values are then the
// addend; with one k-block (plan.kc >= K) the sums are the same as with the addend apart,
// with several the GEMM accumulates onto it from the first k-block on (rounds otherwise).
// `shared_b`: null, or the plan's shared B (plan.shared_b_floats > 0), every k-block built.
void conv_gemm_task(const ConvShape& s, const ConvWeights& w, const float* w_rows,
                    const ConvPlan& p, int64_t t, const float* x, float* y, float* slot,
                    float lo, float hi, const float* addend = nullptr,
                    const float* shared_b = nullptr);
// Row panels [pi0, pi1) of W (kGemmMR rows each) instead of a task's row chunk, for a plan
// whose tasks are row chunks only (one image, one group, one column block): a run that
// sizes its parts by the threads' speeds (RunContext::parallel_parts).
void conv_gemm_rows(const ConvShape& s, const ConvWeights& w, const float* w_rows, const ConvPlan& p,
                    int64_t pi0, int64_t pi1, const float* x, float* y, float* slot, float lo, float hi,
                    const float* addend, const float* shared_b);
// Part `part` (< plan.k_parts) of a K-split plan: every column block of the GEMM over
// K rows [part * part_k, min(K, (part + 1) * part_k)) into `partial` ([M, P] of one
// image, group 1), unclamped, the bias added by part 0 only. `slot`: plan.slot_floats.
void conv_gemm_part(const ConvShape& s, const ConvWeights& w, const float* w_rows, const ConvPlan& p,
                    int64_t part, const float* x, float* partial, float* slot);
// Builds k-block kb (< plan.k_blocks) of the shared B into shared_b (plan.shared_b_floats
// floats); slot (plan.slot_floats) holds its tables. Calls for different kb may run
// concurrently.
void conv_gemm_build_b(const ConvShape& s, const ConvWeights& w, const ConvPlan& p, int64_t kb,
                       const float* x, float* shared_b, float* slot);

// ---- Direct convolution on few input channels (first convs) --------------------------
// An image's input channels split into s x s zero-padded phase planes once per run (s the
// stride: plane (c, rp, cp) holds padded rows r with r % s == rp and columns with
// col % s == cp), then every tile reads its B rows straight from them: tap (c, kh, kw) of
// output row oh, columns ow .. ow + NR - 1 is plane (c, kh % s, kw % s) at row
// oh + kh / s, columns ow + kw / s on, NR consecutive floats. The indirect tile
// (gemm_tile_indirect_fn) walks a per-k offset table; tiles stay within an output row (a
// partial last one). No im2col
// copy: that was 14-24 % of the first convs' time (K = 27 and 147: every input float
// copied 9 and ~12 times).
//
// Applies to 2-D, one-group, dilation-1 convs with stride 1 or 2 (both axes), at least
// kDirectMinTapsPerFloat taps per stride^2, at most kDirectMaxChannels input channels, K
// up to kDirectMaxK (one k-block) and output rows of at least NR pixels.
constexpr int64_t kDirectMaxChannels = 4, kDirectMinTapsPerFloat = 6;
constexpr int64_t kDirectMaxK = 256;  // one k-block: the tile's B rows (K x NR) stay in L1
bool conv_direct_applies(const ConvShape& s);
// The part of conv_direct_applies that the weights and attributes decide (group, input
// channels per group, taps, the product of the strides); the rest depends on the run's
// shapes. ConvPacked names its kernel from it.
inline bool conv_direct_weights_fit(int64_t group, int64_t Cg, int64_t taps, int64_t stride_area) {
  return group == 1 && Cg <= kDirectMaxChannels && taps >= kDirectMinTapsPerFloat * stride_area &&
         Cg * taps <= kDirectMaxK;
}
struct DirectConvPlan {
  int64_t stride = 1;
  int64_t hh = 0, wh = 0;       // plane rows and columns
  int64_t plane_floats = 0;     // per plane: hh * wh and the slack a tile's last loads read
  int64_t planes_floats = 0;    // one image's planes: C * stride^2 planes
  int64_t rows_per_task = 1, tasks = 0;  // output rows of one image per task; tasks per image
};
DirectConvPlan plan_direct_conv(const ConvShape& s, int threads);
// Planes of channels [c0, c1) of one image (x: its C input planes) into `planes`.
void direct_conv_planes(const ConvShape& s, const DirectConvPlan& p, const float* x, int64_t c0, int64_t c1,
                        float* planes);
// The K offsets (into `planes`) of the taps, in W's order (c, kh, kw).
void direct_conv_offsets(const ConvShape& s, const DirectConvPlan& p, int32_t* off);
// Task t of one image: its output rows, every output channel. y, addend: the image's
// [M, P] (addend may be null, or y itself: one k-block, so its sums are unchanged).
void direct_conv_task(const ConvShape& s, const ConvWeights& w, const float* w_rows, const DirectConvPlan& p,
                      int64_t t, const float* planes, const int32_t* off, float* y, float lo, float hi,
                      const float* addend);

// ---- Depthwise ----------------------------------------------------------------------
// Applies when group == C (Cg == 1) and the D axis is trivial (k[0] == 1, in[0] == 1).
bool dwconv_applies(const ConvShape& s);
int64_t dwconv_slot_floats(const ConvShape& s);
// The padded plane for vectors of L floats: rows, and floats per phase row (room for the
// last, partial vector of a row plus the widest tap offset).
struct DwGeom {
  int64_t rows, width;
};
inline DwGeom dw_geom(const ConvShape& s, int64_t L) {
  DwGeom g;
  g.rows = (s.out[1] - 1) * s.s[1] + (s.k[1] - 1) * s.d[1] + 1;
  g.width = (s.out[2] + L - 1) / L * L + ((s.k[2] - 1) * s.d[2]) / s.s[2] + 1;
  return g;
}
// 3x3, dilation 1, one output per channel, padding 1 before each axis; stride 1 with the
// output map the input map (padding 1 after), or stride 2 with outputs (in - 1) / 2 + 1
// (padding 0 or 1 after): the shapes dwconv_plane computes directly on the rows of X, with
// no padded copy, where dwconv_rows_applies (AVX-512 targets).
inline bool dwconv_rows_shape(const ConvShape& s) {
  if (!(s.M == s.C && s.k[0] == 1 && s.in[0] == 1 && s.k[1] == 3 && s.k[2] == 3 && s.d[1] == 1 &&
        s.d[2] == 1 && s.pb[1] == 1 && s.pb[2] == 1 && s.s[1] == s.s[2]))
    return false;
  if (s.s[1] == 1) return s.out[1] == s.in[1] && s.out[2] == s.in[2];
  return s.s[1] == 2 && s.out[1] == (s.in[1] - 1) / 2 + 1 && s.out[2] == (s.in[2] - 1) / 2 + 1;
}
bool dwconv_rows_applies(const ConvShape& s);
// Where dwconv_rows_applies: output rows [oh0, oh1) of plane `plane` (as dwconv_plane's),
// row oh at y + (oh - oh0) * ys (a band of rows anywhere: ConvPacked's depthwise -> 1x1
// fusion). oh0 even, and oh1 even or the plane's last row's end: two rows at a time.
void dwconv_rows(const ConvShape& s, int64_t plane, int64_t oh0, int64_t oh1, const float* x, const float* w,
                 const float* bias, float* y, int64_t ys, float lo, float hi);
// dwconv_plane's scratch per plane: the padded plane (dwconv_slot_floats), or none where
// it reads X's rows in place.
int64_t dwconv_plane_slot_floats(const ConvShape& s);
// Output plane `plane` = n * M + m of y; w: [M, kh * kw]; bias [M] or null.
void dwconv_plane(const ConvShape& s, int64_t plane, const float* x, const float* w,
                  const float* bias, float* y, float* slot, float lo, float hi);

// Channel-blocked depthwise (f32_dwconv_hwy.cc): block b = L consecutive output planes
// b * L .. b * L + L - 1 of y (L = dwconv_block_lanes()), all of one image. Applies when
// the plane kernel does, with one output per channel (M == C), M a multiple of L and at
// most 25 taps; scratch: dwconv_block_slot_floats.
constexpr int64_t kDwBlockMaxTaps = 25;
bool dwconv_block_applies(const ConvShape& s);
int64_t dwconv_block_lanes();
// Whether this target builds and writes back the blocks by register transposes (else gathers).
bool dwconv_block_transposes();
int64_t dwconv_block_slot_floats(const ConvShape& s);
// Output rows [oh_begin, oh_end) of the block (any range: workers may split a plane by
// rows, each writing the rows it will read next; the overloads without take every row).
void dwconv_block(const ConvShape& s, int64_t block, int64_t oh_begin, int64_t oh_end, const float* x,
                  const float* w, const float* bias, float* y, float* slot, float lo, float hi);
inline void dwconv_block(const ConvShape& s, int64_t block, const float* x, const float* w, const float* bias,
                         float* y, float* slot, float lo, float hi) {
  dwconv_block(s, block, 0, s.out[1], x, w, bias, y, slot, lo, hi);
}

// A pointwise conv ("expand": K input channels -> C, then a clamp) computed inside the
// channel-blocked depthwise that alone reads its output (dwconv_expand_block): the
// depthwise's input E = clamp(W1 X + b1, lo, hi) is made a chunk of rows at a time in the
// block's scratch, never stored whole. wt: W1 k-major, wt[k * wt_stride + c] = W1[c][k].
struct DwExpand {
  int64_t K = 0, wt_stride = 0;
  const float* wt = nullptr;
  const float* bias = nullptr;  // [C] or null
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
};
// Block b as dwconv_block (s: the depthwise's shape, s.C its channels; where
// dwconv_block_applies; scratch: dwconv_block_slot_floats); x: X [N, K, IH, IW] of the
// expand (the depthwise's input size).
// Rows [oh_begin, oh_end) as dwconv_block's; a range's expand computes the input rows
// its taps read (those above and below the range again in the neighbouring ranges).
void dwconv_expand_block(const ConvShape& s, int64_t block, int64_t oh_begin, int64_t oh_end, const DwExpand& e,
                         const float* x, const float* w, const float* bias, float* y, float* slot, float lo,
                         float hi);
inline void dwconv_expand_block(const ConvShape& s, int64_t block, const DwExpand& e, const float* x,
                                const float* w, const float* bias, float* y, float* slot, float lo, float hi) {
  dwconv_expand_block(s, block, 0, s.out[1], e, x, w, bias, y, slot, lo, hi);
}

// ---- Max pooling, same plane scheme (2-D or 1-D: k[0] == 1, in[0] == 1) -------------
// Output plane `plane` = n * C + c of y (M == C, group unused); scratch: dwconv_slot_floats.
void maxpool_plane(const ConvShape& s, int64_t plane, const float* x, float* y, float* slot);
// Whether maxpool_plane reads the input rows in place (stride 2 along rows, dilation 1, at
// most 3 taps a row, output rows of at least one vector of at most kMaxRowLanes floats;
// planes without NaN): no padded copy of the plane. maxpool_rows_shape: the same for
// vectors of L floats (the kernel's own test).
constexpr int64_t kMaxRowLanes = 8;
inline bool maxpool_rows_shape(const ConvShape& s, int64_t L) {
  return L >= 2 && s.k[0] == 1 && s.in[0] == 1 && s.s[2] == 2 && s.d[2] == 1 && s.k[2] <= 3 &&
         s.out[2] >= L;
}
bool maxpool_plane_reads_rows(const ConvShape& s);
void maxpool_ref(const ConvShape& s, const float* x, float* y);
// Channel-blocked max pooling (as dwconv_block): block b = planes b * L .. b * L + L - 1;
// C a multiple of L, windows of at most 64 taps; scratch: dwconv_block_slot_floats.
constexpr int64_t kMaxPoolBlockTaps = 64;
bool maxpool_block_applies(const ConvShape& s);
void maxpool_block(const ConvShape& s, int64_t block, const float* x, float* y, float* slot);

// ---- Reference (tests) ------------------------------------------------------------------
// Direct definition, doubles; w: [M, Cg, k...], bias [M] or null.
void conv_ref(const ConvShape& s, const float* x, const float* w, const float* bias, float* y,
              float lo, float hi);

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
