// Convolution, Deconvolution, InnerProduct, Pooling.
#include "caffe_layers.h"

#include <minnow/ir.h>

namespace minnow {
namespace caffe {

namespace {

const TextMsg& param_or_empty(const LayerDef& l, const char* field) {
  static const TextMsg kEmpty;
  const TextMsg* p = l.param(field);
  return p ? *p : kEmpty;
}

// Caffe's kernel / stride / pad / dilation: `name` repeated (one value for every spatial
// dim, or one per dim), or name_h + name_w for 2-D.
// `hw` is the stem of the 2-D forms ("kernel" for kernel_size: kernel_h / kernel_w), or
// empty when there are none (dilation).
std::vector<int64_t> spatial(Ctx& c, const LayerDef& l, const TextMsg& p, const std::string& name, size_t nsp,
                             int64_t def, const std::string& hw) {
  if (!hw.empty() && (p.has(hw + "_h") || p.has(hw + "_w"))) {
    if (nsp != 2) c.fail(l, hw + "_h / " + hw + "_w need a 2-D spatial input");
    if (p.has(name)) c.fail(l, "give either " + name + " or " + hw + "_h / " + hw + "_w, not both");
    if (!p.has(hw + "_h") || !p.has(hw + "_w")) c.fail(l, hw + "_h and " + hw + "_w must be given together");
    return {p.get_int(hw + "_h", def), p.get_int(hw + "_w", def)};
  }
  auto v = p.get_ints(name);
  if (v.empty()) return std::vector<int64_t>(nsp, def);
  if (v.size() == 1) return std::vector<int64_t>(nsp, v[0]);
  if (v.size() != nsp)
    c.fail(l, name + " has " + std::to_string(v.size()) + " values for " + std::to_string(nsp) + " spatial dims");
  return v;
}

struct ConvGeometry {
  std::vector<int64_t> k, s, p, d;
};

ConvGeometry conv_geometry(Ctx& c, const LayerDef& l, const TextMsg& p, size_t nsp) {
  ConvGeometry g;
  g.k = spatial(c, l, p, "kernel_size", nsp, 0, "kernel");
  g.s = spatial(c, l, p, "stride", nsp, 1, "stride");
  g.p = spatial(c, l, p, "pad", nsp, 0, "pad");
  g.d = spatial(c, l, p, "dilation", nsp, 1, "");
  for (size_t i = 0; i < nsp; ++i) {
    if (g.k[i] <= 0) c.fail(l, "kernel size must be given and > 0");
    if (g.s[i] <= 0 || g.d[i] <= 0 || g.p[i] < 0) c.fail(l, "stride / dilation must be > 0 and pad >= 0");
  }
  return g;
}

std::vector<int64_t> pads_of(const std::vector<int64_t>& p) {
  std::vector<int64_t> pads(p);
  pads.insert(pads.end(), p.begin(), p.end());  // Caffe pads are symmetric
  return pads;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

void convolution(Ctx& c, const LayerDef& l, bool transposed) {
  c.require(l, 1, SIZE_MAX, 1, SIZE_MAX);
  if (l.tops.size() != l.bottoms.size()) c.fail(l, "needs one top per bottom");
  const TextMsg& p = param_or_empty(l, "convolution_param");
  if (p.get_int("axis", 1) != 1) c.unsupported(l, "convolution over an axis other than 1 (channels)");
  int64_t nout = p.get_int("num_output", 0), group = p.get_int("group", 1);
  bool bias = p.get_bool("bias_term", true);
  if (nout <= 0) c.fail(l, "num_output must be given and > 0");
  Shape xs = c.shape(c.in(l, 0));
  if (xs.size() < 3 || xs.size() > 5) c.fail(l, "input has rank " + std::to_string(xs.size()) + "; expected 3 to 5 (N, C, spatial...)");
  size_t nsp = xs.size() - 2;
  int64_t cin = xs[1];
  if (group <= 0 || cin % group || nout % group)
    c.fail(l, "group " + std::to_string(group) + " must divide both the input channels (" + std::to_string(cin) +
                  ") and num_output (" + std::to_string(nout) + ")");
  ConvGeometry g = conv_geometry(c, l, p, nsp);
  int64_t kvol = 1;
  for (int64_t k : g.k) kvol *= k;
  // Weights: Convolution [out, in/group, k...]; Deconvolution [in, out/group, k...],
  // which are exactly ONNX Conv's and ConvTranspose's layouts.
  int64_t wcount = transposed ? cin * (nout / group) * kvol : nout * (cin / group) * kvol;
  const CaffeBlob& wb = c.blob(l, 0, wcount, "the weight");
  Shape wshape = transposed ? Shape{cin, nout / group} : Shape{nout, cin / group};
  wshape.insert(wshape.end(), g.k.begin(), g.k.end());
  std::vector<std::string> ins{"", c.constant(l, "weight", wshape, wb.data)};
  if (bias) ins.push_back(c.constant(l, "bias", {nout}, c.blob(l, 1, nout, "the bias").data));
  Shape ys{xs[0], nout};
  for (size_t i = 0; i < nsp; ++i) {
    int64_t ext = g.d[i] * (g.k[i] - 1) + 1;
    int64_t o = transposed ? g.s[i] * (xs[2 + i] - 1) + ext - 2 * g.p[i] : (xs[2 + i] + 2 * g.p[i] - ext) / g.s[i] + 1;
    if ((!transposed && xs[2 + i] + 2 * g.p[i] < ext) || o <= 0)
      c.fail(l, "the kernel does not fit the input " + shape_to_string(xs));
    ys.push_back(o);
  }
  std::vector<Attr> attrs{Attr::Ints("kernel_shape", g.k), Attr::Ints("strides", g.s), Attr::Ints("pads", pads_of(g.p)),
                          Attr::Ints("dilations", g.d), Attr::Int("group", group)};
  for (size_t b = 0; b < l.bottoms.size(); ++b) {
    std::string x = c.in(l, b);
    if (c.shape(x) != xs) c.fail(l, "all bottoms must have the same shape");
    ins[0] = x;
    c.node(l, transposed ? "ConvTranspose" : "Conv", ins, {c.out(l, b, ys)}, attrs);
  }
}

}  // namespace

void convert_convolution(Ctx& c, const LayerDef& l) { convolution(c, l, false); }
void convert_deconvolution(Ctx& c, const LayerDef& l) { convolution(c, l, true); }

void convert_inner_product(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  const TextMsg& p = param_or_empty(l, "inner_product_param");
  int64_t n = p.get_int("num_output", 0);
  if (n <= 0) c.fail(l, "num_output must be given and > 0");
  bool bias = p.get_bool("bias_term", true), transpose = p.get_bool("transpose", false);
  std::string x = c.in(l, 0);
  Shape xs = c.shape(x);
  int a = c.axis(l, p.get_int("axis", 1), xs.size());
  int64_t k = product(xs, a, xs.size()), m = product(xs, 0, a);
  // Caffe stores W as [N, K] (or [K, N] with transpose: true), often with legacy 4-D
  // shape 1x1xNxK; only the count is binding.
  const CaffeBlob& wb = c.blob(l, 0, n * k, "the weight");
  std::string w = c.constant(l, "weight", transpose ? Shape{k, n} : Shape{n, k}, wb.data);
  std::vector<std::string> ins{x, w};
  if (bias) ins.push_back(c.constant(l, "bias", {n}, c.blob(l, 1, n, "the bias").data));
  Shape ys(xs.begin(), xs.begin() + a);
  ys.push_back(n);
  // Gemm wants 2-D [M, K]: flatten around the axis when the input is not that already.
  if (!(xs.size() == 2 && a == 1)) {
    std::string flat = c.tmp(l, "flat", {m, k});
    if (a >= 1) c.node(l, "Flatten", {x}, {flat}, {Attr::Int("axis", a)});
    else c.node(l, "Reshape", {x, c.constant_i64(l, "flat_shape", {m, k})}, {flat});
    ins[0] = flat;
  }
  std::vector<Attr> attrs{Attr::Int("transB", transpose ? 0 : 1)};
  if (a == 1) {
    c.node(l, "Gemm", ins, {c.out(l, 0, ys)}, attrs);
  } else {
    // Caffe keeps the leading axes: [d0 .. d(axis-1), N].
    std::string y2 = c.tmp(l, "gemm", {m, n});
    c.node(l, "Gemm", ins, {y2}, attrs);
    c.node(l, "Reshape", {y2, c.constant_i64(l, "out_shape", ys)}, {c.out(l, 0, ys)});
  }
}

void convert_pooling(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 2);
  if (l.tops.size() == 2) c.unsupported(l, "the max-pooling mask top (second top)");
  const TextMsg& p = param_or_empty(l, "pooling_param");
  std::string method = p.get_string("pool", "MAX");
  bool is_max = method == "MAX" || method == "0", is_ave = method == "AVE" || method == "1";
  if (!is_max && !is_ave) c.unsupported(l, "pool method " + method + " (only MAX and AVE)");
  std::string x = c.in(l, 0);
  Shape xs = c.shape(x);
  if (xs.size() != 4) c.fail(l, "input has shape " + shape_to_string(xs) + "; pooling needs N x C x H x W");
  if (p.get_bool("global_pooling", false)) {
    if (p.has("kernel_size") || p.has("kernel_h") || p.has("kernel_w"))
      c.fail(l, "global_pooling and a kernel size cannot both be given");
    c.node(l, is_max ? "GlobalMaxPool" : "GlobalAveragePool", {x}, {c.out(l, 0, {xs[0], xs[1], 1, 1})});
    return;
  }
  auto k = spatial(c, l, p, "kernel_size", 2, 0, "kernel");
  auto s = spatial(c, l, p, "stride", 2, 1, "stride");
  auto pad = spatial(c, l, p, "pad", 2, 0, "pad");
  std::string round = p.get_string("round_mode", "CEIL");  // newer Caffe; default is ceil
  bool ceil = round != "FLOOR" && round != "1";
  Shape ys{xs[0], xs[1]};
  for (int i = 0; i < 2; ++i) {
    int64_t in = xs[2 + i];
    if (k[i] <= 0 || s[i] <= 0 || pad[i] < 0) c.fail(l, "kernel and stride must be > 0, pad >= 0");
    if (pad[i] >= k[i]) c.fail(l, "pad must be smaller than the kernel (Caffe requires it)");
    int64_t span = in + 2 * pad[i] - k[i];
    if (span < 0) c.fail(l, "kernel " + std::to_string(k[i]) + " is larger than the padded input " + shape_to_string(xs));
    // Caffe: pooled = ceil(span / stride) + 1, then one less if the last window would
    // start in the right padding (only checked when pad > 0).
    int64_t o = (ceil ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
    if (pad[i] > 0 && (o - 1) * s[i] >= in + pad[i]) --o;
    // The standard op's ceil_mode applies the same correction, also for pad 0. With pad 0
    // Caffe keeps a window that lies wholly outside the input (its output is -FLT_MAX or
    // a division by zero): refuse rather than disagree.
    if (ceil && pad[i] == 0 && (o - 1) * s[i] >= in)
      c.unsupported(l, "Caffe would produce a pooling window entirely outside the input (kernel " + std::to_string(k[i]) +
                           " < stride " + std::to_string(s[i]) + "); its values are undefined");
    ys.push_back(o);
  }
  // MAX ignores padding; AVE divides by the window clipped to input + pad (count_include_pad
  // = 1 in the standard op clips ceil windows at the end padding in the same way).
  std::vector<Attr> attrs{Attr::Ints("kernel_shape", k), Attr::Ints("strides", s), Attr::Ints("pads", pads_of(pad)),
                          Attr::Int("ceil_mode", ceil ? 1 : 0)};
  if (is_ave) attrs.push_back(Attr::Int("count_include_pad", 1));
  c.node(l, is_max ? "MaxPool" : "AveragePool", {x}, {c.out(l, 0, ys)}, attrs);
}

}  // namespace caffe
}  // namespace minnow
