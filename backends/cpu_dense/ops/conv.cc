// Conv: X (N, C, spatial...) * W (M, C/group, kernel...) + B (M), 1-D to 3-D, grouped
// (depthwise when group == C), strided, dilated, padded (explicit or auto_pad).
//
// Direct convolution, lifted to 3-D: one work item is one output row (n, m, od, oh); for
// each input channel of the group and kernel tap the row accumulates w * (a strided slice
// of one input row), with the range of valid output columns computed up front so the
// inner loop has no bounds checks and padding costs nothing.
//
// With constant weights (and bias) the kernel packs them at prepare time and runs the
// SIMD kernels of conv_packed.h instead (direct depthwise, or packed-GEMM convolution);
// the loop below stays as the reference and the path for weights computed at run time.
#include "../conv_packed.h"
#include "../conv_pool.h"
#include "../ops.h"
#include "../spatial.h"

#include <algorithm>

namespace minnow {
namespace cpu_dense {

namespace {

const char* conv_name(int nsp) {
  switch (nsp) {
    case 1: return "f32_conv1d_ref";
    case 2: return "f32_conv2d_ref";
    default: return "f32_conv3d_ref";
  }
}

class ConvKernel final : public OpKernel, public PackedConvSource {
 public:
  ConvKernel(const Node& node, const SpatialAttrs& attrs, int64_t group, bool kernel_attr)
      : OpKernel(node, conv_name(attrs.nsp)),
        attrs_(attrs),
        group_(group),
        kernel_attr_(kernel_attr) {}

  const char* name() const override { return fast_ ? fast_->name() : OpKernel::name(); }

  // A following Relu / Clip, clamped in the SIMD kernels' epilogues (the reference loop
  // for weights computed at run time has no epilogue: it declines).
  bool fuse_clamp(float lo, float hi) override {
    if (!fast_) return false;
    fast_->set_clamp(lo, hi);
    return true;
  }

  // A fused Add's addend may hold the output (ABI 1.5) on the GEMM and Winograd paths:
  // the planner then reuses the addend's memory when nothing reads it afterwards
  // (resnet's residual tensors: one buffer less, and the output is not fetched from
  // memory before it is written).
  int inplace_input() const override {
    return fast_ && fast_->adds_onto_output() ? MN_INPLACE_ADDEND : -1;
  }

  // A residual Add of the output (mn_kernel.fuse_add): the SIMD kernels add
  // inputs[input_index] as they write (before the clamp); the reference loop declines.
  bool fuse_add(int input_index) override {
    if (!fast_ || input_index < 2 || input_index > 3) return false;
    addend_input_ = input_index;
    return true;
  }

  // A pointwise conv (and its clamp) writing this depthwise's X alone (mn_kernel.
  // fuse_producer): computed a chunk of rows at a time inside the channel blocks
  // (ConvPacked::fuse_expand decides where that pays), X never stored. The producer's X,
  // W, B come after this node's inputs, from first_extra on.
  // Or, this conv being pointwise, the 3x3 depthwise conv (and its clamp) writing its X
  // alone: computed a band of rows at a time as this conv reads it (ConvPacked::
  // fuse_depthwise decides where that pays); the depthwise's X, W, B come after.
  bool fuse_producer(int input_index, Kernel& producer, int first_extra) override {
    auto* p = dynamic_cast<ConvKernel*>(&producer);
    if (input_index != 0 || !fast_ || !static_shape_ || !p || !p->fast_ || !p->w_const_ || p->addend_input_ >= 0 ||
        p->attrs_.nsp != attrs_.nsp)
      return false;
    if (!fast_->depthwise()) {
      if (group_ != 1 || attrs_.nsp != 2 || !p->static_shape_ || !p->fast_->depthwise()) return false;
      for (int i = 0; i < attrs_.nsp; ++i)
        if (w_dims_[2 + i] != 1 || attrs_.stride[i] != 1 || attrs_.pad_begin[i] != 0 || attrs_.pad_end[i] != 0)
          return false;
      if (!fast_->fuse_depthwise(p->fast_, *p->static_shape_, *static_shape_)) return false;
      producer_first_ = first_extra;
      return true;
    }
    if (addend_input_ >= 0 || p->group_ != 1) return false;
    for (int i = 0; i < p->attrs_.nsp; ++i)
      if (p->w_dims_[2 + i] != 1 || p->attrs_.stride[i] != 1 || p->attrs_.pad_begin[i] != 0 || p->attrs_.pad_end[i] != 0)
        return false;
    if (p->attrs_.auto_pad == AutoPad::kValid || p->w_dims_[0] != static_shape_->C) return false;
    if (!fast_->fuse_expand(*p->fast_, p->w_const_, p->w_dims_[1], *static_shape_)) return false;
    producer_first_ = first_extra;
    return true;
  }

  // For a MaxPool computing this conv's output as it pools it (conv_pool.h).
  std::shared_ptr<const ConvPacked> packed_conv() const override {
    return fast_ && addend_input_ < 0 && producer_first_ < 0 ? fast_ : nullptr;
  }
  const kernels::ConvShape* packed_conv_shape() const override { return static_shape_.get(); }
  const float* constant_weights() const override { return w_const_; }

  // X written by a depthwise conv of this backend (mn_kernel.set_producer): by channel
  // blocks over the threads, so a K split reads mostly what each thread wrote; but by
  // output rows where the depthwise splits rows (the channel-blocked kernel on maps of
  // 56x56 and more), like this conv's own column blocks, and a K split there read half of
  // X from the other thread's cache, then half of the other's partial sums: mobilenet_v2's
  // projections 96 / 144 -> 24 at 56x56 took longer on 2 threads than on 1 (Zen 5 guest,
  // whose two vCPUs pay ~470 ns a line the other wrote); without it the model took 0.956-0.960x
  // the time at 2 threads (bench/inproc_ab, 40 blocks of 20 runs, twice).
  void set_producer(int input_index, Kernel& producer) override {
    auto* p = dynamic_cast<ConvKernel*>(&producer);
    if (input_index != 0 || !fast_ || !p || !p->fast_ || !p->fast_->depthwise()) return;
    // Unknown shapes (symbolic dims): as the channel-blocked kernel does on large maps.
    const int64_t rows_from = p->static_shape_ ? p->fast_->dw_rows_from_pixels(*p->static_shape_) : kDwRowPartsMinPixels;
    fast_->set_input_by_channels(true, rows_from);
  }

  // Packs W (and B) for the SIMD kernels when both are constants.
  void try_pack(const Node& node) {
    const mn_tensor& w = *node.input(1).t;
    if (!node.input(1).is_constant() || !w.data) return;
    for (int i = 0; i < w.rank; ++i)
      if (w.dims[i] < 0) return;
    const float* bias = nullptr;
    if (node.has_input(2)) {
      if (!node.input(2).is_constant() || !node.input(2).t->data) return;
      bias = node.input(2).data<float>();
    }
    double taps = 1;
    for (int i = 2; i < w.rank; ++i) taps *= static_cast<double>(w.dims[i]);
    // Winograd needs a 3x3 kernel, stride 1 and dilation 1 (the attributes), and pays on
    // maps not too small for the input channels (ConvPacked::winograd_pays); X's spatial
    // dims must be known for that here (the shapes are checked again at run time).
    const mn_tensor& x = *node.input(0).t;
    bool winograd = attrs_.nsp == 2 && w.rank == 4 && w.dims[2] == 3 && w.dims[3] == 3 &&
                    x.rank == 4 && x.dims[2] > 0 && x.dims[3] > 0 &&
                    ConvPacked::winograd_pays(x.dims[2] * x.dims[3], w.dims[1]);
    for (int i = 0; i < attrs_.nsp; ++i)
      winograd = winograd && attrs_.stride[i] == 1 && attrs_.dilation[i] == 1;
    int64_t stride_area = 1;
    for (int i = 0; i < attrs_.nsp; ++i) stride_area *= attrs_.stride[i];
    fast_ = std::make_shared<ConvPacked>(static_cast<const float*>(w.data), w.dims[0], w.dims[1],
                                         static_cast<int64_t>(taps), group_, bias, attrs_.nsp,
                                         winograd ? ConvPacked::winograd_tile(x.dims[2], x.dims[3]) : 0,
                                         stride_area);
    // For fuse_producer: W as given (a constant of the model, which outlives this kernel),
    // and the run shape where every shape is known now.
    w_const_ = static_cast<const float*>(w.data);
    for (int i = 0; i < w.rank && i < 5; ++i) w_dims_[i] = w.dims[i];
    const mn_tensor& out = *node.output(0).t;
    bool known = x.rank == w.rank && out.rank == w.rank;
    for (int i = 0; known && i < x.rank; ++i) known = x.dims[i] > 0 && out.dims[i] > 0;
    if (known) {
      kernels::ConvShape shape;
      mn_tensor in[3] = {x, w, node.has_input(2) ? *node.input(2).t : mn_tensor{}};
      try {
        geometry(in, node.has_input(2) ? 3 : 2, &out, 1, &shape, nullptr, /*output_data=*/false);
        static_shape_ = std::make_unique<kernels::ConvShape>(shape);
      } catch (const PluginError&) {
        // shapes the run will refuse: no fusion
      }
    }
  }

  size_t scratch_bytes(const mn_tensor* in, int num_inputs, const mn_tensor* out,
                       int num_outputs) const override {
    return scratch_bytes_for_threads(in, num_inputs, out, num_outputs, 0);
  }
  size_t scratch_bytes_for_threads(const mn_tensor* in, int num_inputs, const mn_tensor* out,
                                   int num_outputs, int threads) const override {
    if (!fast_) return 0;
    kernels::ConvShape s;
    if (addend_input_ >= 0) num_inputs = std::min(num_inputs, addend_input_);
    if (producer_first_ >= 0) num_inputs = std::min(num_inputs, producer_first_);
    geometry(in, num_inputs, out, num_outputs, &s);
    return fast_->scratch_bytes(s, threads);
  }

  double flops(const mn_tensor* in, int num_inputs, const mn_tensor* out, int) const override {
    double taps = 1;
    for (int i = 1; i < in[1].rank; ++i) taps *= static_cast<double>(in[1].dims[i]);
    double f = 2.0 * static_cast<double>(numel(out[0])) * taps;
    // A fused pointwise producer: its multiply-adds too (X's elements x its input channels);
    // a fused depthwise one: X's elements x its taps.
    if (producer_first_ >= 0 && fast_ && fast_->fused_depthwise())
      f += 2.0 * static_cast<double>(numel(in[0])) * static_cast<double>(fast_->fused_depthwise_shape().taps());
    else if (producer_first_ >= 0 && num_inputs > producer_first_ && in[producer_first_].rank > 1)
      f += 2.0 * static_cast<double>(numel(in[0])) * static_cast<double>(in[producer_first_].dims[1]);
    return f;
  }

  // Validates the run-time shapes and resolves the geometry (3 lifted axes); also gives
  // the fast kernels' shape when `s` is not null. Returns the bias pointer (or null).
  // `output_data`: false at prepare time (the output's shape is checked, it has no data yet).
  const float* geometry(const mn_tensor* in, int num_inputs, const mn_tensor* out,
                        int num_outputs, kernels::ConvShape* s, Axis* axes = nullptr,
                        bool output_data = true) const {
    if (num_inputs < 2) fail("inputs missing at run time");
    check_dtype(in[0], MN_F32, "X");
    check_dtype(in[1], MN_F32, "W");
    const int nsp = attrs_.nsp;
    if (in[0].rank != nsp + 2 || in[1].rank != nsp + 2)
      fail("X " + shape_str(in[0]) + " and W " + shape_str(in[1]) + " must have rank " +
           std::to_string(nsp + 2));
    const int64_t N = in[0].dims[0], C = in[0].dims[1];
    const int64_t M = in[1].dims[0], Cg = in[1].dims[1];
    if (Cg * group_ != C)
      fail("W " + shape_str(in[1]) + " expects " + std::to_string(Cg * group_) +
           " input channels (group " + std::to_string(group_) + "), X has " + std::to_string(C));
    if (M % group_ != 0)
      fail(std::to_string(M) + " output channels do not divide into group " +
           std::to_string(group_));
    const float* bias = nullptr;
    if (num_inputs > 2 && present(in[2])) {
      check_dtype(in[2], MN_F32, "B");
      if (in[2].rank != 1 || in[2].dims[0] != M)
        fail("bias " + shape_str(in[2]) + " must be [" + std::to_string(M) + "]");
      bias = static_cast<const float*>(in[2].data);
    }

    SpatialAttrs a = attrs_;
    for (int i = 0; i < nsp; ++i) {
      if (kernel_attr_ && a.kernel[i] != in[1].dims[2 + i])
        fail("kernel_shape differs from W " + shape_str(in[1]));
      a.kernel[i] = in[1].dims[2 + i];
    }
    if (out[0].rank != nsp + 2) fail("output " + shape_str(out[0]) + " has the wrong rank");
    Axis ax[kMaxSpatial];
    std::string err = resolve_geometry(a, in[0].dims + 2, out[0].dims + 2, ax);
    if (!err.empty()) fail(err);
    Dims od;
    od.rank = nsp + 2;
    od[0] = N;
    od[1] = M;
    for (int i = 0; i < nsp; ++i) od[2 + i] = out[0].dims[2 + i];
    if (output_data) {
      check_output(out, num_outputs, 0, MN_F32, od);
    } else if (num_outputs < 1 || out[0].dtype != MN_F32 || out[0].rank != od.rank ||
               !std::equal(out[0].dims, out[0].dims + od.rank, od.d)) {
      fail("output " + shape_str(out[0]) + " differs from the computed shape");
    }
    if (axes)
      for (int i = 0; i < kMaxSpatial; ++i) axes[i] = ax[i];
    if (s) *s = conv_shape(ax, N, C, M, group_);
    return bias;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    kernels::ConvShape shape;
    Axis ax[kMaxSpatial];
    // A fused addend comes after the node's own inputs (a fused producer's after it).
    const int all_inputs = num_inputs;
    const float* addend = nullptr;
    if (addend_input_ >= 0) {
      if (num_inputs <= addend_input_) fail("the fused Add's addend is missing at run time");
      const mn_tensor& r = in[addend_input_];
      check_dtype(r, MN_F32, "the fused Add's addend");
      if (r.rank != out[0].rank || !std::equal(r.dims, r.dims + r.rank, out[0].dims))
        fail("the fused Add's addend " + shape_str(r) + " differs from the output " + shape_str(out[0]));
      addend = static_cast<const float*>(r.data);
      num_inputs = addend_input_;
    }
    if (producer_first_ >= 0 && fast_->fused_depthwise()) {  // the fused depthwise's X, W, B
      if (all_inputs < producer_first_ + 2) fail("the fused depthwise conv's inputs are missing at run time");
      const mn_tensor& x0 = in[producer_first_];
      check_dtype(x0, MN_F32, "the fused depthwise conv's X");
      geometry(in, std::min(num_inputs, producer_first_), out, num_outputs, &shape, ax);
      const kernels::ConvShape& ds = fast_->fused_depthwise_shape();
      if (x0.rank != 4 || !x0.data || x0.dims[0] != shape.N || x0.dims[1] != ds.C || x0.dims[2] != ds.in[1] ||
          x0.dims[3] != ds.in[2])
        fail("the fused depthwise conv's X " + shape_str(x0) + " differs from the shape it was prepared for");
      fast_->run_after_dw(ctx, shape, static_cast<const float*>(x0.data), static_cast<const float*>(in[1].data),
                          static_cast<float*>(out[0].data), addend);
      return;
    }
    if (producer_first_ >= 0) {  // the fused expand's X, W, B come after the node's inputs
      if (num_inputs < producer_first_ + 2) fail("the fused pointwise conv's inputs are missing at run time");
      const mn_tensor& x1 = in[producer_first_];
      check_dtype(x1, MN_F32, "the fused pointwise conv's X");
      geometry(in, producer_first_, out, num_outputs, &shape, ax);
      if (x1.rank != in[0].rank || !x1.data || x1.dims[0] != shape.N ||
          !std::equal(x1.dims + 2, x1.dims + x1.rank, in[0].dims + 2))
        fail("the fused pointwise conv's X " + shape_str(x1) + " does not match X " + shape_str(in[0]));
      fast_->run_expand(ctx, shape, static_cast<const float*>(x1.data), static_cast<float*>(out[0].data));
      return;
    }
    const float* bias = geometry(in, num_inputs, out, num_outputs, &shape, ax);
    if (fast_) {
      fast_->run(ctx, shape, static_cast<const float*>(in[0].data),
                 static_cast<const float*>(in[1].data), static_cast<float*>(out[0].data), addend);
      return;
    }
    const int64_t N = shape.N, C = shape.C, M = shape.M, Cg = shape.Cg();

    const float* x = static_cast<const float*>(in[0].data);
    const float* w = static_cast<const float*>(in[1].data);
    float* y = static_cast<float*>(out[0].data);
    const Axis D = ax[0], H = ax[1], W = ax[2];
    const int64_t Mg = M / group_;
    const int64_t rows = N * M * D.out * H.out;
    const int64_t taps = Cg * D.k * H.k * W.k;
    auto body = [&](size_t r0, size_t r1) {
      for (int64_t r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
        // r enumerates (n, m, od, oh) in the output's row-major order.
        const int64_t oh = r % H.out;
        const int64_t od_ = (r / H.out) % D.out;
        const int64_t m = (r / (H.out * D.out)) % M;
        const int64_t n = r / (H.out * D.out * M);
        const int64_t g = m / Mg;
        float* yr = y + r * W.out;
        const float b0 = bias ? bias[m] : 0.0f;
        for (int64_t ow = 0; ow < W.out; ++ow) yr[ow] = b0;

        int64_t kd0, kd1, kh0, kh1;
        const int64_t d_start = od_ * D.s - D.pb, h_start = oh * H.s - H.pb;
        valid_taps(d_start, D.d, D.k, D.in, &kd0, &kd1);
        valid_taps(h_start, H.d, H.k, H.in, &kh0, &kh1);
        for (int64_t c = 0; c < Cg; ++c) {
          const int64_t ic = g * Cg + c;
          const float* xc = x + (n * C + ic) * D.in * H.in * W.in;
          const float* wc = w + (m * Cg + c) * D.k * H.k * W.k;
          for (int64_t kd = kd0; kd < kd1; ++kd) {
            const int64_t id = d_start + kd * D.d;
            for (int64_t kh = kh0; kh < kh1; ++kh) {
              const int64_t ih = h_start + kh * H.d;
              const float* xrow = xc + (id * H.in + ih) * W.in;
              const float* wrow = wc + (kd * H.k + kh) * W.k;
              for (int64_t kw = 0; kw < W.k; ++kw) {
                // Input column of output column ow: ow*s + off. Valid ow: 0 <= that < W.in.
                const int64_t off = kw * W.d - W.pb;
                const int64_t ow0 = off >= 0 ? 0 : (-off + W.s - 1) / W.s;
                const int64_t ow1 =
                    off > W.in - 1 ? 0 : std::min(W.out, (W.in - 1 - off) / W.s + 1);
                const float wv = wrow[kw];
                for (int64_t ow = ow0; ow < ow1; ++ow) yr[ow] += wv * xrow[ow * W.s + off];
              }
            }
          }
        }
      }
    };
    ctx.parallel_for(static_cast<size_t>(rows), grain_for(2.0 * W.out * taps + W.out),
                     std::move(body));
  }

 private:
  SpatialAttrs attrs_;
  int64_t group_;
  bool kernel_attr_;
  std::shared_ptr<ConvPacked> fast_;
  int addend_input_ = -1;  // index of a fused Add's addend among the run's inputs, or -1
  int producer_first_ = -1;  // index of a fused producer's X among the run's inputs, or -1
  const float* w_const_ = nullptr;  // W as given when constant (fast_ set)
  int64_t w_dims_[5] = {0, 0, 0, 0, 0};
  std::unique_ptr<kernels::ConvShape> static_shape_;  // the run's shape, when known at prepare
};

// Validation shared by bid and make; returns the kernel ready to build.
std::unique_ptr<ConvKernel> check_conv(const Node& node) {
  require_inputs(node, 2, 3);
  require_input_dtype(node, 0, {MN_F32});
  require_input_dtype(node, 1, {MN_F32});
  if (node.has_input(2)) require_input_dtype(node, 2, {MN_F32});
  const mn_tensor& x = *node.input(0).t;
  const mn_tensor& w = *node.input(1).t;
  if (!rank_known(w)) node.fail("W's rank must be known when the kernel is chosen");
  if (w.rank < 3) node.fail("W must have rank >= 3, got " + shape_str(w));
  const int nsp = w.rank - 2;
  if (rank_known(x) && x.rank != w.rank)
    node.fail("X " + shape_str(x) + " and W " + shape_str(w) + " differ in rank");
  const int64_t group = node.attr_int("group", 1);
  if (group < 1) node.fail("group must be >= 1, got " + std::to_string(group));
  if (dim_known(x, 1)) {
    if (x.dims[1] % group != 0)
      node.fail("group " + std::to_string(group) + " does not divide " + std::to_string(x.dims[1]) +
                " input channels");
    if (dim_known(w, 1) && w.dims[1] * group != x.dims[1])
      node.fail("W " + shape_str(w) + " expects " + std::to_string(w.dims[1] * group) +
                " input channels (group " + std::to_string(group) + "), X " + shape_str(x) +
                " has " + std::to_string(x.dims[1]));
  }
  if (dim_known(w, 0) && w.dims[0] % group != 0)
    node.fail("group " + std::to_string(group) + " does not divide " + std::to_string(w.dims[0]) +
              " output channels");
  if (node.has_input(2)) {
    const mn_tensor& b = *node.input(2).t;
    if (rank_known(b) &&
        (b.rank != 1 || (dim_known(b, 0) && dim_known(w, 0) && b.dims[0] != w.dims[0])))
      node.fail("bias " + shape_str(b) + " must be [M] for W " + shape_str(w));
  }
  SpatialAttrs a = parse_spatial(node, nsp, w.dims + 2, false);
  return std::make_unique<ConvKernel>(node, a, group, node.has_attr("kernel_shape"));
}

}  // namespace

double conv_bid(const Node& node) {
  check_conv(node);
  const mn_tensor& w = *node.input(1).t;
  double taps = 1;
  for (int i = 1; i < w.rank; ++i) taps *= dim_estimate(w, i);
  return 2.0 * numel_estimate(*node.output(0).t) * taps;
}

std::unique_ptr<Kernel> conv_make(const Node& node) {
  std::unique_ptr<ConvKernel> k = check_conv(node);
  k->try_pack(node);
  return k;
}

}  // namespace cpu_dense
}  // namespace minnow
