// The fast path of Conv (ops/conv.cc) when W (and B) are constants: weights packed once at
// prepare time (or read in place where that is as fast: kernels/conv.h), then either the direct depthwise kernel or the packed GEMM convolution of
// kernels/conv.h, split over the context's parallel_for.
#pragma once

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

#include "common.h"
#include "kernels/conv.h"
#include "kernels/winograd.h"
#include "spatial.h"

namespace minnow {
namespace cpu_dense {

// Scratch slots for `tasks` over `threads`: each parallel work item owns one slot and runs
// its tasks one after the other, so concurrently running items never share memory.
int64_t scratch_slots(int64_t tasks, int threads);
// The most slots of slot_floats floats a kernel asks scratch for (any thread count): at
// most kConvMaxSlots, and no more than kMaxSlotsBytes in all (at least one), so a kernel
// with large slots (a channel block of a 56x56 plane is ~0.2-0.5 MB) does not ask 16 of them.
constexpr int64_t kMaxSlotsBytes = int64_t(4) << 20;
int64_t max_scratch_slots(int64_t tasks, int64_t slot_floats);

// Runs fn(item, slot) for the items [0, count) in parallel: they are split evenly over
// scratch_slots(count, threads) slots (at most max_scratch_slots) of slot_floats floats each, one slot's items one
// after another (so no two running items share a slot). Throws (naming `what`) when the
// scratch the kernel asked for is too small.
// How many slots run_in_slots uses for count items.
inline int64_t run_slots(int threads, int64_t count, int64_t slot_floats) {
  return std::min(scratch_slots(count, threads), max_scratch_slots(count, slot_floats));
}

// Where slot sl of `slots` lies in `floats` floats of scratch. On several threads, the
// slots of each thread's part of a parallel_for over the slots (the run team's static
// parts: thread t takes slots [slots t / T, slots (t + 1) / T) unless it steals) go in
// that thread's share of the scratch, a T-th of it, the same share in every layer: so a
// scratch line is written by the same thread from layer to layer. The session's one
// scratch was carved differently by each layer, and a line the other vCPU wrote last
// costs a read-for-ownership across the vCPUs (Zen 5 guest: 470 ns a round trip; with
// every thread's slots in a buffer of its own, squeezenet1_1 at 2 threads took 0.985x
// the time, resnet50 0.988x). Where a share cannot hold its part, the slots follow one
// another as before. Either way no two slots overlap.
class SlotLayout {
 public:
  SlotLayout(int threads, int64_t slots, int64_t slot_floats, int64_t floats)
      : threads_(std::max(threads, 1)), slots_(slots), slot_floats_(slot_floats) {
    share_ = floats / threads_ / kLineFloats * kLineFloats;
    by_thread_ = threads_ > 1 && slots > 1 && (slots + threads_ - 1) / threads_ * slot_floats <= share_;
  }
  // Slot sl's first float, counted from the scratch's start.
  int64_t offset(int64_t sl) const {
    if (!by_thread_) return sl * slot_floats_;
    // The part holding sl, the last t with first(t) = floor(slots t / T) <= sl.
    const int64_t t = ((sl + 1) * threads_ - 1) / slots_;
    return t * share_ + (sl - first(t)) * slot_floats_;
  }
  float* at(float* base, int64_t sl) const { return base + offset(sl); }
  // The floats `slots` slots need for the per-thread layout on `threads` threads.
  static int64_t floats_for(int threads, int64_t slots, int64_t slot_floats) {
    const int64_t T = std::max(threads, 1);
    if (T == 1 || slots <= 1) return slots * slot_floats;
    return T * ((slots + T - 1) / T * slot_floats + kLineFloats);
  }

 private:
  static constexpr int64_t kLineFloats = 16;  // shares start on cache lines
  int64_t first(int64_t t) const { return slots_ * t / threads_; }
  int64_t threads_, slots_, slot_floats_, share_ = 0;
  bool by_thread_ = false;
};

// The scratch bytes run_in_slots takes on `threads` threads, or (0) on any count.
inline size_t run_in_slots_bytes(int threads, int64_t count, int64_t slot_floats) {
  if (threads > 0) return size_t(SlotLayout::floats_for(threads, run_slots(threads, count, slot_floats), slot_floats)) * sizeof(float);
  return size_t(max_scratch_slots(count, slot_floats) * slot_floats) * sizeof(float);
}
// `floats`: the scratch floats the slots may take from its start.
template <class F>
void run_in_slots(const RunContext& ctx, int64_t count, int64_t slot_floats, const char* what, F fn,
                  int64_t floats) {
  const int64_t slots = run_slots(ctx.num_threads(), count, slot_floats);
  if (floats < slots * slot_floats) throw PluginError(std::string(what) + ": scratch too small");
  float* scratch = static_cast<float*>(ctx.scratch());
  const SlotLayout layout(ctx.num_threads(), slots, slot_floats, floats);
  ctx.parallel_for(size_t(slots), 1, [&](size_t s0, size_t s1) {
    for (size_t sl = s0; sl < s1; ++sl) {
      float* slot = layout.at(scratch, int64_t(sl));
      const int64_t i0 = count * int64_t(sl) / slots, i1 = count * int64_t(sl + 1) / slots;
      for (int64_t i = i0; i < i1; ++i) fn(i, slot);
    }
  });
}
// The slots may take all the scratch.
template <class F>
void run_in_slots(const RunContext& ctx, int64_t count, int64_t slot_floats, const char* what, F fn) {
  run_in_slots(ctx, count, slot_floats, what, fn, int64_t(ctx.scratch_size() / sizeof(float)));
}
// Runs fn(begin, end, slot) for `parts` parts of the items [0, n), sized by the threads'
// speeds (RunContext::parallel_parts: a few parts of fixed cost each), each part with a
// slot of its own laid out by thread (SlotLayout) in the first `floats` floats of the
// scratch. Throws (naming `what`) when those cannot hold the slots.
template <class F>
void run_parts_in_slots(const RunContext& ctx, int64_t n, int64_t parts, int64_t slot_floats, const char* what,
                        F fn, int64_t floats) {
  if (floats < parts * slot_floats) throw PluginError(std::string(what) + ": scratch too small");
  float* scratch = static_cast<float*>(ctx.scratch());
  const SlotLayout layout(ctx.num_threads(), parts, slot_floats, floats);
  ctx.parallel_parts(size_t(n), 1, size_t(parts), [&](size_t j, size_t a, size_t b) {
    fn(int64_t(a), int64_t(b), layout.at(scratch, int64_t(j)));
  });
}

// The kernels' geometry from resolved axes (Conv, and MaxPool with M == group == C).
kernels::ConvShape conv_shape(const Axis ax[kMaxSpatial], int64_t N, int64_t C, int64_t M,
                              int64_t group);

// The channel-blocked depthwise splits its output rows over the threads (not its channel
// blocks) on maps of this many output pixels or more (conv_packed.cc, dw_row_parts).
constexpr int64_t kDwRowPartsMinPixels = 56 * 56;

class ConvPacked {
 public:
  // w: [M, Cg, k...] (taps = product of k), bias [M] or null. `spatial` = spatial rank.
  // Whether Winograd pays on a map of `pixels` (input or output: stride 1, so about
  // equal) with `channels` input channels (conv_packed.cc has the measurements).
  static bool winograd_pays(int64_t pixels, int64_t channels);
  // The Winograd output tile for an h x w map (input or output: stride 1): 4 (F(4x4, 3x3))
  // where its tiles fill a GEMM panel, else 2 (conv_packed.cc has the measurements).
  static int winograd_tile(int64_t h, int64_t w);
  // `winograd_tile` 2 or 4: the node is a 3x3, stride 1, dilation 1, one-group 2-D
  // convolution (from its attributes); its weights are then also transformed for Winograd
  // F(m x m, 3x3), used at run time when the shapes allow (winograd_applies) and the map is
  // not tiny. 0: no Winograd.
  // `stride_area`: the product of the strides (names the direct kernel where it will run).
  ConvPacked(const float* w, int64_t M, int64_t Cg, int64_t taps, int64_t group,
             const float* bias, int spatial, int winograd_tile = 0, int64_t stride_area = 1);
  const char* name() const {
    if (dwp_) return "f32_dwconv3x3_conv1x1__fused";
    if (expand_.K > 0) return "f32_conv1x1_dwconv__fused";
    if (depthwise_) return "f32_dwconv_direct";
    if (direct_name_) return "f32_conv_direct_6x2v__phases";
    if (winograd_.u) return winograd_.m == 4 ? "f32_conv3x3_winograd_f4x4__6x2v" : "f32_conv3x3_winograd_f2x2__6x2v";
    if (gemm_.tall) return "f32_conv_gemm_16x1v__tall";  // pointwise runs; strided 1x1 take 6x2v
    return gemm_.in_place ? "f32_conv_gemm_6x2v__wrows" : "f32_conv_gemm_6x2v";
  }
  // threads: the runs' thread count, or 0 for any.
  size_t scratch_bytes(const kernels::ConvShape& s, int threads = 0) const;
  // Whether the addend may be y itself (y's memory reused for the output, holding the
  // addend when run starts): the GEMM accumulates onto it, Winograd's output transform
  // reads each element before writing it; the depthwise kernels write y first.
  bool adds_onto_output() const { return !depthwise_; }
  // w: W as the run was given it (read when the GEMM weights are used in place).
  // addend: null, or a tensor of y's shape added before the clamp (a fused residual Add);
  // it may be y itself when adds_onto_output().
  void run(const RunContext& ctx, const kernels::ConvShape& s, const float* x, const float* w,
           float* y, const float* addend = nullptr) const;
  // Takes on the pointwise conv `expand` that alone writes this depthwise's input (W1 as
  // given, [C, K] for this node's C channels; its bias and clamp), for the run shape s:
  // true where s runs channel blocks on a map where that paid (kExpandMinPixels); every
  // run then goes through run_expand and the input is never stored.
  bool fuse_expand(const ConvPacked& expand, const float* w1, int64_t K, const kernels::ConvShape& s);
  bool fused_expand() const { return expand_.K > 0; }
  bool depthwise() const { return depthwise_; }
  // The input is written by a depthwise conv, split by channels over the threads (its
  // planes or channel blocks) on maps of fewer than `rows_from_pixels` pixels, by output
  // rows on larger ones (run_dw_blocks' row parts): plan_conv may split K where it is
  // written by channels, on larger maps too.
  void set_input_by_channels(bool v, int64_t rows_from_pixels = std::numeric_limits<int64_t>::max()) {
    input_channels_below_pixels_ = v ? rows_from_pixels : 0;
  }
  // For a depthwise conv of output shape s: the fewest output pixels on which it splits its
  // output rows over several threads rather than its channels (the channel-blocked kernel
  // on large maps), or the largest int64 where it never does.
  int64_t dw_rows_from_pixels(const kernels::ConvShape& s) const;
  // Whether the input of s is written by channels on `threads` threads: plan_conv's hint.
  bool input_by_channels(const kernels::ConvShape& s, int threads) const {
    return input_channels_below_pixels_ > 0 && (threads <= 1 || s.Pin() < input_channels_below_pixels_);
  }
  // The run with the expand fused: x1 = the expand's input [N, K, in...] (s as at fusing).
  void run_expand(const RunContext& ctx, const kernels::ConvShape& s, const float* x1, float* y) const;
  // Takes on the 3x3 depthwise conv `dw` (of shape ds; kept, for its weights, bias and
  // clamp) that alone writes this pointwise conv's input, for this conv's run shape s: true where the
  // depthwise reads its rows in place (kernels::dwconv_rows_applies) on a map large enough
  // to pay (conv_packed.cc); every run then goes through run_after_dw, the input never
  // stored.
  bool fuse_depthwise(std::shared_ptr<const ConvPacked> dw, const kernels::ConvShape& ds, const kernels::ConvShape& s);
  bool fused_depthwise() const { return dwp_ != nullptr; }
  // The depthwise's shape at fusing (fused_depthwise()).
  const kernels::ConvShape& fused_depthwise_shape() const { return dwp_shape_; }
  // The run with the depthwise fused: x0 = the depthwise's input [N, C, in...] (ds as at
  // fusing), s this conv's shape; addend as run's (y itself too).
  void run_after_dw(const RunContext& ctx, const kernels::ConvShape& s, const float* x0, const float* w_rows,
                    float* y, const float* addend) const;
  // On one thread, for a consumer that runs the conv a band of output rows at a time
  // (conv_pool.h): whether this conv can (the GEMM and direct paths: not depthwise, not
  // Winograd, no fused expand), the scratch floats run_rows takes for the shape s (a band:
  // its own N = 1 image, rows and padding), and the run (clamped, no addend) of s from x
  // into y, with that scratch.
  bool runs_rows() const { return !depthwise_ && !winograd_.u && expand_.K == 0; }
  int64_t rows_scratch_floats(const kernels::ConvShape& s) const;
  void run_rows(const kernels::ConvShape& s, const float* x, const float* w_rows, float* y, float* scratch,
                int64_t scratch_floats) const;
  // The bias ([M] or null) and clamp every run applies, for a consumer computing a conv
  // that runs_rows() its own way (conv_pool.h's first convs with channels as lanes).
  const float* bias() const { return gemm_.bias.get(); }
  float clamp_lo() const { return lo_; }
  float clamp_hi() const { return hi_; }
  // Every later run clamps its outputs to [lo, hi] (a fused Relu / Clip).
  void set_clamp(float lo, float hi) {
    lo_ = lo;
    hi_ = hi;
  }

 private:
  bool use_winograd(const kernels::ConvShape& s) const;
  bool use_dw_block(const kernels::ConvShape& s) const;
  // plan_conv(s, threads), reused while the node runs the same shape on as many threads:
  // its split search (up to ~160 cost estimates) took 2-8 us a run on 28x28 and 56x56
  // maps at 2 threads (~1 % of mobilenet_v2's and squeezenet1_1's runs).
  kernels::ConvPlan plan(const kernels::ConvShape& s, int threads) const;
  void run_winograd(const RunContext& ctx, const kernels::ConvShape& s, const float* x,
                    float* y, const float* addend) const;
  void run_gemm(const RunContext& ctx, const kernels::ConvShape& s, const kernels::ConvPlan& p, const float* x,
                const float* w_rows, float* y, const float* addend) const;
  void run_k_parts(const RunContext& ctx, const kernels::ConvShape& s, const kernels::ConvPlan& p,
                   const float* x, const float* w_rows, float* y, const float* addend) const;
  bool use_direct(const kernels::ConvShape& s) const { return !depthwise_ && kernels::conv_direct_applies(s); }
  void run_direct(const RunContext& ctx, const kernels::ConvShape& s, const float* x, const float* w_rows,
                  float* y, const float* addend) const;

  float lo_ = -std::numeric_limits<float>::infinity();
  float hi_ = std::numeric_limits<float>::infinity();
  bool depthwise_ = false;
  // The input is written by channels on maps of fewer pixels than this (0: on none).
  int64_t input_channels_below_pixels_ = 0;
  // Few input channels, many taps per stride^2 (kernels::conv_direct_applies but for the run's
  // shapes): name() says the direct kernel.
  bool direct_name_ = false;
  kernels::ConvWeights gemm_;
  kernels::WinogradWeights winograd_;
  kernels::FloatBuf dw_w_, dw_b_;
  // A fused expand (fuse_expand): W1 k-major, its bias; the shape it was fused for.
  kernels::FloatBuf expand_wt_, expand_b_;
  kernels::DwExpand expand_;
  kernels::ConvShape expand_shape_;
  // A fused depthwise producer (fuse_depthwise): its packed conv (weights, bias, clamp:
  // read, not copied), its shape, and the output rows a band computes at a time.
  std::shared_ptr<const ConvPacked> dwp_;
  kernels::ConvShape dwp_shape_;
  int64_t dwp_rows_ = 0;
  // The last plan (sessions sharing the model may run the node at once); none while
  // plan_threads_ is 0.
  mutable std::mutex plan_mu_;
  mutable int plan_threads_ = 0;
  mutable kernels::ConvShape plan_shape_;
  mutable kernels::ConvPlan plan_;
};

}  // namespace cpu_dense
}  // namespace minnow
