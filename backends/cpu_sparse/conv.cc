// 2-D convolution (group 1) with constant, sparse filters. W[M, C, kh, kw] is packed as a
// sparse [M, C*kh*kw] matrix. A 1x1 convolution with stride 1 and no padding multiplies it
// straight onto X[n] seen as [C, H*W]; any other geometry first lays input patches out as
// columns (im2col), a tile of output positions at a time, and multiplies onto that.
#include "ops.h"

#include <algorithm>

namespace minnow {
namespace cpu_sparse {

namespace {

// Output positions per im2col tile: bounds the scratch (C*kh*kw*kTile floats) while
// keeping the columns long enough for whole vector strips.
constexpr int64_t kTile = 512;

struct Geometry {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  std::string auto_pad = "NOTSET";
  bool pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && pb == 0 &&
           pr == 0 && (auto_pad == "NOTSET" || auto_pad == "VALID");
  }
};

// One axis: output size and leading pad for input size `in` (ONNX rules).
bool resolve(const std::string& auto_pad, int64_t in, int64_t k, int64_t s, int64_t d,
             int64_t pb, int64_t pe, int64_t* out, int64_t* lead) {
  const int64_t span = (k - 1) * d + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    *out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (*out - 1) * s + span - in);
    *lead = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    return true;
  }
  if (auto_pad == "VALID") pb = pe = 0;
  *lead = pb;
  *out = (in + pb + pe - span) / s + 1;
  return in + pb + pe >= span;
}

// Validates the node (throws PluginError with the reason to decline) and reads geometry.
Geometry conv_geometry(const Node& node) {
  if (node.num_inputs() < 2 || node.num_inputs() > 3)
    node.fail("expects 2 or 3 inputs, got " + std::to_string(node.num_inputs()));
  const mn_tensor& x = *node.input(0).t;
  const mn_tensor& w = *node.input(1).t;
  if (x.dtype != MN_F32 || w.dtype != MN_F32) node.fail("only float32 is implemented", MN_ERR_UNSUPPORTED);
  if (node.has_input(2) && node.input(2).dtype() != MN_F32) node.fail("B must be float32", MN_ERR_UNSUPPORTED);
  if (!w.is_constant || !w.data) node.fail("filters are not a constant", MN_ERR_UNSUPPORTED);
  if (w.rank != 4) node.fail("only 2-D convolution is implemented, W is " + shape_str(w), MN_ERR_UNSUPPORTED);
  if (x.rank >= 0 && x.rank != 4) node.fail("X " + shape_str(x) + " must be 4-D for W " + shape_str(w));
  if (node.attr_int("group", 1) != 1)
    node.fail("grouped / depthwise convolution stays dense (group " +
              std::to_string(node.attr_int("group", 1)) + ")", MN_ERR_UNSUPPORTED);
  if (x.rank == 4 && x.dims[1] >= 0 && x.dims[1] != w.dims[1])
    node.fail("X " + shape_str(x) + " has " + std::to_string(x.dims[1]) + " channels, W " +
              shape_str(w) + " expects " + std::to_string(w.dims[1]));
  if (w.dims[0] <= 0 || w.dims[1] <= 0 || w.dims[2] <= 0 || w.dims[3] <= 0)
    node.fail("empty filters " + shape_str(w), MN_ERR_UNSUPPORTED);
  Geometry g;
  g.kh = w.dims[2];
  g.kw = w.dims[3];
  const auto ks = node.attr_ints("kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != g.kh || ks[1] != g.kw))
    node.fail("kernel_shape differs from W " + shape_str(w));
  const auto st = node.attr_ints("strides", {1, 1});
  const auto dl = node.attr_ints("dilations", {1, 1});
  const auto pd = node.attr_ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || dl.size() != 2 || pd.size() != 4)
    node.fail("strides / dilations / pads have the wrong length for a 2-D convolution");
  g.sh = st[0];
  g.sw = st[1];
  g.dh = dl[0];
  g.dw = dl[1];
  g.pt = pd[0];
  g.pl = pd[1];
  g.pb = pd[2];
  g.pr = pd[3];
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.pt < 0 || g.pl < 0 || g.pb < 0 || g.pr < 0)
    node.fail("strides and dilations must be >= 1 and pads >= 0");
  g.auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (g.auto_pad != "NOTSET" && g.auto_pad != "VALID" && g.auto_pad != "SAME_UPPER" &&
      g.auto_pad != "SAME_LOWER")
    node.fail("unknown auto_pad '" + g.auto_pad + "'");
  return g;
}

Kind conv_kind(const Geometry& g) { return g.pointwise() ? Kind::kConv1x1 : Kind::kConvIm2col; }

class ConvKernel final : public SparseKernel {
 public:
  ConvKernel(const Node& node, const Geometry& g, const LayoutChoice& lc)
      : SparseKernel(node, kernel_name(conv_kind(g), lc.shape)), g_(g) {
    const mn_tensor& w = *node.input(1).t;
    c_ = w.dims[1];
    w_ = pack(static_cast<const float*>(w.data), w.dims[0], c_ * g.kh * g.kw, c_ * g.kh * g.kw,
              lc.shape);
  }

  size_t scratch_bytes(const mn_tensor*, int, const mn_tensor* out, int num_outputs) const override {
    if (!g_.pointwise()) return static_cast<size_t>(w_.cols * kTile) * sizeof(float);
    if (!out || num_outputs < 1 || out[0].rank != 4) return 0;
    return padded_bytes(out[0].dims[2] * out[0].dims[3]);
  }

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    const double positions = static_cast<double>(out[0].dims[0]) * out[0].dims[2] * out[0].dims[3];
    return 2.0 * positions * static_cast<double>(w_.values.size());
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 2 || num_outputs < 1) fail("inputs or outputs missing at run time");
    const mn_tensor& x = in[0];
    if (x.dtype != MN_F32 || x.rank != 4 || x.dims[1] != c_)
      fail("X " + shape_str(x) + " must be float32 [N," + std::to_string(c_) + ",H,W]");
    const int64_t N = x.dims[0], H = x.dims[2], W = x.dims[3], M = w_.rows;
    int64_t OH, OW, ph, pw;
    if (!resolve(g_.auto_pad, H, g_.kh, g_.sh, g_.dh, g_.pt, g_.pb, &OH, &ph) ||
        !resolve(g_.auto_pad, W, g_.kw, g_.sw, g_.dw, g_.pl, g_.pr, &OW, &pw))
      fail("the filter does not fit X " + shape_str(x));
    const mn_tensor& y = out[0];
    if (y.dtype != MN_F32 || y.rank != 4 || y.dims[0] != N || y.dims[1] != M || y.dims[2] != OH ||
        y.dims[3] != OW)
      fail("output " + shape_str(y) + " should be float32 [" + std::to_string(N) + "," +
           std::to_string(M) + "," + std::to_string(OH) + "," + std::to_string(OW) + "]");
    const float* bias = nullptr;
    if (num_inputs > 2 && in[2].dtype != MN_UNDEFINED) {
      if (in[2].dtype != MN_F32 || in[2].rank != 1 || in[2].dims[0] != M)
        fail("bias " + shape_str(in[2]) + " must be float32 [" + std::to_string(M) + "]");
      bias = static_cast<const float*>(in[2].data);
    }
    const float* xp = static_cast<const float*>(x.data);
    float* yp = static_cast<float*>(y.data);
    const SparseMatrix& w = w_;
    const int64_t P = OH * OW;
    for (int64_t n = 0; n < N; ++n) {
      const float* xn = xp + n * c_ * H * W;
      float* yn = yp + n * M * P;
      if (g_.pointwise()) {
        // A pixel count that is not a whole number of vectors (7x7, 14x14) is copied into
        // rows padded to whole vectors, so the kernel's last vector runs in SIMD too (the
        // copy is ~2 % of the multiply at 70 % sparsity; scalar tails cost far more).
        SpmmArgs args{xn, P, P, bias, 0.0f, yn, P};
        clamp_into(&args);
        const size_t pb = padded_bytes(P);
        if (pb && ctx.scratch() && ctx.scratch_size() >= pb) {
          const int64_t ld = static_cast<int64_t>(pb / sizeof(float)) / c_;
          float* xpad = static_cast<float*>(ctx.scratch());
          for (int64_t c = 0; c < c_; ++c) {
            std::copy(xn + c * P, xn + (c + 1) * P, xpad + c * ld);
            std::fill(xpad + c * ld + P, xpad + (c + 1) * ld, 0.0f);
          }
          args.x = xpad;
          args.ldx = ld;
        }
        ctx.parallel_for(static_cast<size_t>(w.block_rows()), block_row_grain(w, double(P)),
                         [&](size_t b0, size_t b1) {
                           spmm(w, args, static_cast<int64_t>(b0), static_cast<int64_t>(b1));
                         });
        continue;
      }
      float* cols = static_cast<float*>(ctx.scratch());
      if (!cols || ctx.scratch_size() < scratch_bytes(nullptr, 0, nullptr, 0))
        fail("scratch buffer missing or too small");
      for (int64_t p0 = 0; p0 < P; p0 += kTile) {
        const int64_t T = std::min(kTile, P - p0);
        im2col(xn, H, W, OW, ph, pw, p0, T, cols);
        SpmmArgs args{cols, T, T, bias, 0.0f, yn + p0, P};
        clamp_into(&args);
        ctx.parallel_for(static_cast<size_t>(w.block_rows()), block_row_grain(w, double(T)),
                         [&](size_t b0, size_t b1) {
                           spmm(w, args, static_cast<int64_t>(b0), static_cast<int64_t>(b1));
                         });
      }
    }
  }

 private:
  // Column t of the tile is output position p0 + t; row (c, i, j) holds the input value
  // under tap (i, j) of channel c, zero where that falls into padding.
  void im2col(const float* x, int64_t H, int64_t W, int64_t OW, int64_t ph, int64_t pw,
              int64_t p0, int64_t T, float* cols) const {
    for (int64_t c = 0; c < c_; ++c)
      for (int64_t i = 0; i < g_.kh; ++i)
        for (int64_t j = 0; j < g_.kw; ++j) {
          float* row = cols + ((c * g_.kh + i) * g_.kw + j) * T;
          const float* xc = x + c * H * W;
          int64_t oh = p0 / OW, ow = p0 % OW;
          for (int64_t t = 0; t < T; ++t) {
            const int64_t ih = oh * g_.sh - ph + i * g_.dh, iw = ow * g_.sw - pw + j * g_.dw;
            row[t] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? xc[ih * W + iw] : 0.0f;
            if (++ow == OW) {
              ow = 0;
              ++oh;
            }
          }
        }
  }

  // Bytes of X padded to rows of whole vectors for P pixels; 0 when P needs no padding.
  size_t padded_bytes(int64_t P) const {
    const int64_t L = spmm_lanes();
    if (P <= 0 || P % L == 0) return 0;
    return static_cast<size_t>(c_ * ((P + L - 1) / L * L)) * sizeof(float);
  }

  Geometry g_;
  int64_t c_ = 0;
  SparseMatrix w_;
};

LayoutChoice conv_layout(const Node& node, const Geometry& g) {
  const mn_tensor& w = *node.input(1).t;
  return choose_layout(conv_kind(g), static_cast<const float*>(w.data), w.dims[0],
                       w.dims[1] * w.dims[2] * w.dims[3], false);
}

}  // namespace

BidResult conv_bid(const Node& node) {
  const Geometry g = conv_geometry(node);
  const LayoutChoice lc = conv_layout(node, g);
  if (!lc.ok) throw PluginError(lc.reason, MN_ERR_UNSUPPORTED);
  const mn_tensor& w = *node.input(1).t;
  const mn_tensor& y = *node.output(0).t;
  double outs = 1;  // unknown dims count as 1, as cpu_dense estimates them
  for (int i = 0; i < y.rank; ++i) outs *= y.dims[i] < 0 ? 1.0 : static_cast<double>(y.dims[i]);
  const double dense_flops = 2.0 * outs * static_cast<double>(w.dims[1] * w.dims[2] * w.dims[3]);
  return {std::max(1.0, dense_flops * kDenseNsPerFlop * lc.ratio), lc.reason};
}

std::unique_ptr<Kernel> conv_make(const Node& node) {
  const Geometry g = conv_geometry(node);
  const LayoutChoice lc = conv_layout(node, g);
  if (!lc.ok) throw PluginError(node_label(node) + ": " + lc.reason, MN_ERR_UNSUPPORTED);
  return std::make_unique<ConvKernel>(node, g, lc);
}

}  // namespace cpu_sparse
}  // namespace minnow
