// ConvTranspose: X (N, C, spatial...) with W (C, M/group, kernel...) + B (M) gives
// Y (N, M, out...), 1-D to 3-D, grouped, strided, dilated, padded (pads, auto_pad, or
// derived from output_shape), output_padding.
//
// Input element i and tap k land on output position o = i*s + k*d - pad_begin. Written as
// a gather so that one work item owns one output row (n, m, od, oh) and no two items
// write the same element: for each input channel of the group and each (kd, kh) whose
// input row exists, the row receives w * (that input row) scattered with stride s along
// the last axis, the valid input-column range computed up front (no bounds checks inside).
// pad_begin may be negative (output_shape larger than the natural size): the extra output
// elements then hold the bias only, which the same formula gives.
#include "../ops.h"
#include "../spatial.h"

namespace minnow {
namespace cpu_dense {

namespace {

const char* conv_transpose_name(int nsp) {
  switch (nsp) {
    case 1: return "f32_deconv1d_ref";
    case 2: return "f32_deconv2d_ref";
    default: return "f32_deconv3d_ref";
  }
}

// Python-style floor division (total padding may be negative).
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

struct DeconvAttrs {
  int nsp = 0;
  int64_t group = 1;
  SpatialAttrs sp;  // kernel (-1 until W is known), strides, dilations, pads, auto_pad
  int64_t out_pad[kMaxSpatial] = {0, 0, 0};
  int64_t out_shape[kMaxSpatial] = {-1, -1, -1};  // output_shape attribute (spatial), or -1
  AutoPad auto_pad = AutoPad::kNotSet;
};

// ONNX's rule for one spatial dim: the output size and the padding at its beginning.
// Without output_shape, explicit pads give the natural size; SAME_* aim at in * stride.
// With a target size, the total padding it implies is split as the spec says (SAME_UPPER:
// the larger half at the end; otherwise at the beginning).
void resolve_deconv_axis(const DeconvAttrs& a, int i, int64_t in, int64_t k, int64_t* out,
                         int64_t* pb) {
  const SpatialAttrs& sp = a.sp;
  const int64_t eff = (k - 1) * sp.dilation[i] + 1;
  const int64_t natural = sp.stride[i] * (in - 1) + a.out_pad[i] + eff;
  int64_t target = a.out_shape[i];
  if (target < 0 && (sp.auto_pad == AutoPad::kSameUpper || sp.auto_pad == AutoPad::kSameLower))
    target = in * sp.stride[i];
  if (target < 0) {
    const bool valid = sp.auto_pad == AutoPad::kValid;
    *pb = valid ? 0 : sp.pad_begin[i];
    *out = natural - (valid ? 0 : sp.pad_begin[i] + sp.pad_end[i]);
    return;
  }
  const int64_t total = natural - target;
  const int64_t half = floor_div(total, 2);
  *pb = sp.auto_pad == AutoPad::kSameUpper ? half : total - half;
  *out = target;
}

class ConvTransposeKernel final : public OpKernel {
 public:
  ConvTransposeKernel(const Node& node, const DeconvAttrs& attrs)
      : OpKernel(node, conv_transpose_name(attrs.nsp)), a_(attrs) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    double per_x = 1;  // (M / group) * taps per input element
    for (int i = 1; i < in[1].rank; ++i) per_x *= static_cast<double>(in[1].dims[i]);
    return 2.0 * static_cast<double>(numel(in[0])) * per_x;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 2) fail("inputs missing at run time");
    check_dtype(in[0], MN_F32, "X");
    check_dtype(in[1], MN_F32, "W");
    const int nsp = a_.nsp;
    if (in[0].rank != nsp + 2 || in[1].rank != nsp + 2)
      fail("X " + shape_str(in[0]) + " and W " + shape_str(in[1]) + " must have rank " +
           std::to_string(nsp + 2));
    const int64_t N = in[0].dims[0], C = in[0].dims[1];
    const int64_t group = a_.group, Mg = in[1].dims[1], M = Mg * group;
    if (in[1].dims[0] != C || C % group != 0)
      fail("W " + shape_str(in[1]) + " must have X's " + std::to_string(C) +
           " channels first, divisible by group " + std::to_string(group));
    const int64_t Cg = C / group;
    const float* bias = nullptr;
    if (num_inputs > 2 && present(in[2])) {
      check_dtype(in[2], MN_F32, "B");
      if (in[2].rank != 1 || in[2].dims[0] != M)
        fail("bias " + shape_str(in[2]) + " must be [" + std::to_string(M) + "]");
      bias = static_cast<const float*>(in[2].data);
    }
    // Lift to 3-D: leading axes of size 1, kernel 1, stride 1, no padding.
    int64_t ins[kMaxSpatial] = {1, 1, 1}, outs[kMaxSpatial] = {1, 1, 1};
    int64_t ks[kMaxSpatial] = {1, 1, 1}, ss[kMaxSpatial] = {1, 1, 1};
    int64_t ds[kMaxSpatial] = {1, 1, 1}, pbs[kMaxSpatial] = {0, 0, 0};
    Dims od;
    od.rank = nsp + 2;
    od[0] = N;
    od[1] = M;
    const int lead = kMaxSpatial - nsp;
    for (int i = 0; i < nsp; ++i) {
      const int64_t k = in[1].dims[2 + i];
      if (a_.sp.kernel[i] >= 0 && a_.sp.kernel[i] != k)
        fail("kernel_shape differs from W " + shape_str(in[1]));
      int64_t o = 0, pb = 0;
      resolve_deconv_axis(a_, i, in[0].dims[2 + i], k, &o, &pb);
      if (o < 1)
        fail("spatial dim " + std::to_string(i) + " of the output would be " + std::to_string(o));
      od[2 + i] = o;
      ins[lead + i] = in[0].dims[2 + i];
      outs[lead + i] = o;
      ks[lead + i] = k;
      ss[lead + i] = a_.sp.stride[i];
      ds[lead + i] = a_.sp.dilation[i];
      pbs[lead + i] = pb;
    }
    check_output(out, num_outputs, 0, MN_F32, od);

    const float* x = static_cast<const float*>(in[0].data);
    const float* w = static_cast<const float*>(in[1].data);
    float* y = static_cast<float*>(out[0].data);
    const int64_t Din = ins[0], Hin = ins[1], Win = ins[2];
    const int64_t Do = outs[0], Ho = outs[1], Wo = outs[2];
    const int64_t kD = ks[0], kH = ks[1], kW = ks[2];
    const int64_t rows = N * M * Do * Ho;
    auto body = [&](size_t r0, size_t r1) {
      for (int64_t r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
        // r enumerates (n, m, od, oh) in the output's row-major order.
        const int64_t oh = r % Ho;
        const int64_t o_d = (r / Ho) % Do;
        const int64_t m = (r / (Ho * Do)) % M;
        const int64_t n = r / (Ho * Do * M);
        const int64_t g = m / Mg, mg = m % Mg;
        float* yr = y + r * Wo;
        const float b0 = bias ? bias[m] : 0.0f;
        for (int64_t ow = 0; ow < Wo; ++ow) yr[ow] = b0;
        for (int64_t kd = 0; kd < kD; ++kd) {
          // Input depth id with id*s + kd*d - pb == o_d.
          const int64_t td = o_d + pbs[0] - kd * ds[0];
          if (td < 0 || td % ss[0] != 0 || td / ss[0] >= Din) continue;
          const int64_t id = td / ss[0];
          for (int64_t kh = 0; kh < kH; ++kh) {
            const int64_t th = oh + pbs[1] - kh * ds[1];
            if (th < 0 || th % ss[1] != 0 || th / ss[1] >= Hin) continue;
            const int64_t ih = th / ss[1];
            for (int64_t kw = 0; kw < kW; ++kw) {
              // Output column of input column iw: iw*s + off; valid iw keep it in [0, Wo).
              const int64_t off = kw * ds[2] - pbs[2];
              const int64_t iw0 = off >= 0 ? 0 : (-off + ss[2] - 1) / ss[2];
              const int64_t iw1 = off > Wo - 1 ? 0 : std::min(Win, (Wo - 1 - off) / ss[2] + 1);
              if (iw0 >= iw1) continue;
              for (int64_t c = 0; c < Cg; ++c) {
                const int64_t ic = g * Cg + c;
                const float* xrow = x + (((n * C + ic) * Din + id) * Hin + ih) * Win;
                const float wv = w[(((ic * Mg + mg) * kD + kd) * kH + kh) * kW + kw];
                for (int64_t iw = iw0; iw < iw1; ++iw) yr[iw * ss[2] + off] += wv * xrow[iw];
              }
            }
          }
        }
      }
    };
    const double per_row = 2.0 * static_cast<double>(Cg * kD * kH * kW) *
                               (static_cast<double>(Win) + 1.0) +
                           static_cast<double>(Wo);
    ctx.parallel_for(static_cast<size_t>(rows), grain_for(per_row), std::move(body));
  }

 private:
  DeconvAttrs a_;
};

// Validation shared by bid and make.
std::unique_ptr<ConvTransposeKernel> check_conv_transpose(const Node& node) {
  require_inputs(node, 2, 3);
  require_input_dtype(node, 0, {MN_F32});
  require_input_dtype(node, 1, {MN_F32});
  if (node.has_input(2)) require_input_dtype(node, 2, {MN_F32});
  const mn_tensor& x = *node.input(0).t;
  const mn_tensor& w = *node.input(1).t;
  if (!rank_known(w)) node.fail("W's rank must be known when the kernel is chosen");
  if (w.rank < 3 || w.rank > 2 + kMaxSpatial)
    node.fail("cpu_dense supports 1 to 3 spatial dims, W is " + shape_str(w), MN_ERR_UNSUPPORTED);
  if (rank_known(x) && x.rank != w.rank)
    node.fail("X " + shape_str(x) + " and W " + shape_str(w) + " differ in rank");
  DeconvAttrs a;
  a.nsp = w.rank - 2;
  a.group = node.attr_int("group", 1);
  if (a.group < 1) node.fail("group must be >= 1, got " + std::to_string(a.group));
  if (dim_known(x, 1) && dim_known(w, 0) && x.dims[1] != w.dims[0])
    node.fail("X " + shape_str(x) + " has " + std::to_string(x.dims[1]) + " channels, W " +
              shape_str(w) + " expects " + std::to_string(w.dims[0]));
  if (dim_known(w, 0) && w.dims[0] % a.group != 0)
    node.fail("group " + std::to_string(a.group) + " does not divide " +
              std::to_string(w.dims[0]) + " input channels");
  if (node.has_input(2) && dim_known(w, 1)) {
    const mn_tensor& b = *node.input(2).t;
    if (rank_known(b) && (b.rank != 1 || (dim_known(b, 0) && b.dims[0] != w.dims[1] * a.group)))
      node.fail("bias " + shape_str(b) + " must be [M] = [" + std::to_string(w.dims[1] * a.group) +
                "]");
  }
  const int nsp = a.nsp;
  // kernel_shape / strides / dilations / pads / auto_pad read as Conv reads them.
  a.sp = parse_spatial(node, nsp, w.dims + 2, false);
  if (node.has_attr("output_padding")) {
    std::vector<int64_t> op = node.attr_ints("output_padding");
    if (static_cast<int>(op.size()) != nsp)
      node.fail("output_padding has " + std::to_string(op.size()) + " values for " +
                std::to_string(nsp) + " spatial dims");
    for (int i = 0; i < nsp; ++i) {
      if (op[i] < 0) node.fail("output_padding values must be >= 0");
      a.out_pad[i] = op[i];
    }
  }
  if (node.has_attr("output_shape")) {
    // Spatial dims only, or (as some exporters write) with N and C in front.
    std::vector<int64_t> os = node.attr_ints("output_shape");
    if (static_cast<int>(os.size()) != nsp && static_cast<int>(os.size()) != nsp + 2)
      node.fail("output_shape has " + std::to_string(os.size()) + " values for " +
                std::to_string(nsp) + " spatial dims");
    for (int i = 0; i < nsp; ++i) {
      a.out_shape[i] = os[os.size() - nsp + i];
      if (a.out_shape[i] < 1) node.fail("output_shape values must be >= 1");
    }
  }
  // With both shapes known, catch an output the attributes cannot produce now.
  const mn_tensor& y = *node.output(0).t;
  if (TensorRef{&x}.shape_known() && TensorRef{&w}.shape_known() && TensorRef{&y}.shape_known() &&
      y.rank == x.rank) {
    for (int i = 0; i < nsp; ++i) {
      int64_t o = 0, pb = 0;
      resolve_deconv_axis(a, i, x.dims[2 + i], w.dims[2 + i], &o, &pb);
      if (o != y.dims[2 + i])
        node.fail("output spatial dim " + std::to_string(i) + " is " +
                  std::to_string(y.dims[2 + i]) + ", the attributes give " + std::to_string(o));
    }
  }
  return std::make_unique<ConvTransposeKernel>(node, a);
}

}  // namespace

double conv_transpose_bid(const Node& node) {
  check_conv_transpose(node);
  const mn_tensor& w = *node.input(1).t;
  double per_x = 1;
  for (int i = 1; i < w.rank; ++i) per_x *= dim_estimate(w, i);
  return 2.0 * numel_estimate(*node.input(0).t) * per_x;
}

std::unique_ptr<Kernel> conv_transpose_make(const Node& node) {
  return check_conv_transpose(node);
}

}  // namespace cpu_dense
}  // namespace minnow
