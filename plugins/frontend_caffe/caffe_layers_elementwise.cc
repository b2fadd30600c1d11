// Activations, Power, Dropout, Eltwise, BatchNorm (+ Scale), Scale, Bias, Softmax.
#include "caffe_layers.h"

#include <cmath>

namespace minnow {
namespace caffe {

namespace {

const TextMsg& param_or_empty(const LayerDef& l, const char* field) {
  static const TextMsg kEmpty;
  const TextMsg* p = l.param(field);
  return p ? *p : kEmpty;
}

void unary(Ctx& c, const LayerDef& l, const std::string& op, std::vector<Attr> attrs = {}) {
  c.require(l, 1, 1, 1, 1);
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  c.node(l, op, {x}, {c.out(l, 0, s)}, std::move(attrs));
}

// Shape that broadcasts a per-slice parameter of dims s[axis, axis+n) against s: those
// dims followed by ones (leading dims are implied by right-aligned broadcasting).
Shape broadcast_shape(const Shape& s, int axis, size_t n) {
  Shape b(s.begin() + axis, s.begin() + axis + n);
  for (size_t i = axis + n; i < s.size(); ++i) b.push_back(1);
  if (b.empty()) b.push_back(1);
  return b;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

}  // namespace

void convert_relu(Ctx& c, const LayerDef& l) {
  float slope = static_cast<float>(param_or_empty(l, "relu_param").get_float("negative_slope", 0.0));
  if (slope == 0.f) unary(c, l, "Relu");
  else unary(c, l, "LeakyRelu", {Attr::Float("alpha", slope)});
}

void convert_sigmoid(Ctx& c, const LayerDef& l) { unary(c, l, "Sigmoid"); }
void convert_tanh(Ctx& c, const LayerDef& l) { unary(c, l, "Tanh"); }
void convert_absval(Ctx& c, const LayerDef& l) { unary(c, l, "Abs"); }
void convert_elu(Ctx& c, const LayerDef& l) {
  unary(c, l, "Elu", {Attr::Float("alpha", static_cast<float>(param_or_empty(l, "elu_param").get_float("alpha", 1.0)))});
}

void convert_prelu(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  if (s.size() < 2) c.fail(l, "input must have a channel axis (rank >= 2)");
  bool shared = param_or_empty(l, "prelu_param").get_bool("channel_shared", false);
  int64_t count = shared ? 1 : s[1];
  const CaffeBlob& slope = c.blob(l, 0, count, "the slope");
  // PRelu broadcasts the slope against X from the right: [C, 1, ..., 1] for NCHW.
  std::string w = c.constant(l, "slope", shared ? Shape{1} : broadcast_shape(s, 1, 1), slope.data);
  c.node(l, "PRelu", {x, w}, {c.out(l, 0, s)});
}

void convert_power(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  const TextMsg& p = param_or_empty(l, "power_param");
  float power = static_cast<float>(p.get_float("power", 1.0)), scale = static_cast<float>(p.get_float("scale", 1.0)),
        shift = static_cast<float>(p.get_float("shift", 0.0));
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  // y = (shift + scale * x) ^ power, one standard op per non-trivial term.
  struct Step {
    const char* op;
    const char* name;
    float v;
  };
  std::vector<Step> steps;
  if (scale != 1.f) steps.push_back({"Mul", "scale", scale});
  if (shift != 0.f) steps.push_back({"Add", "shift", shift});
  if (power != 1.f) steps.push_back({"Pow", "power", power});
  if (steps.empty()) {
    c.alias(l, 0, x);
    return;
  }
  std::string cur = x;
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string k = c.constant(l, steps[i].name, {1}, {steps[i].v});
    std::string y = i + 1 == steps.size() ? c.out(l, 0, s) : c.tmp(l, steps[i].name, s);
    c.node(l, steps[i].op, {cur, k}, {y});
    cur = y;
  }
}

// Dropout at inference is the identity (Caffe scales during training), so the top is the
// bottom: no node at all.
void convert_dropout(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  c.alias(l, 0, c.in(l, 0));
}

void convert_eltwise(Ctx& c, const LayerDef& l) {
  c.require(l, 2, SIZE_MAX, 1, 1);
  const TextMsg& p = param_or_empty(l, "eltwise_param");
  std::string op = p.get_string("operation", "SUM");
  auto coeff = p.get_floats("coeff");
  std::vector<std::string> xs;
  for (size_t i = 0; i < l.bottoms.size(); ++i) xs.push_back(c.in(l, i));
  Shape s = c.shape(xs[0]);
  for (const auto& x : xs)
    if (c.shape(x) != s)
      c.fail(l, "bottoms must have the same shape (" + shape_to_string(s) + " vs " + shape_to_string(c.shape(x)) + ")");
  std::string std_op;
  if (op == "PROD" || op == "0") std_op = "Mul";
  else if (op == "SUM" || op == "1") std_op = "Add";
  else if (op == "MAX" || op == "2") std_op = "Max";
  else c.unsupported(l, "Eltwise operation " + op);
  if (!coeff.empty() && std_op != "Add") c.fail(l, "coeff is only allowed with operation SUM");
  if (!coeff.empty() && coeff.size() != xs.size())
    c.fail(l, "has " + std::to_string(coeff.size()) + " coeff values for " + std::to_string(xs.size()) + " bottoms");
  // SUM with coefficients: x0*c0 + x1*c1 ...; a -1 becomes Sub, a 1 no Mul.
  std::vector<std::string> terms = xs;
  std::vector<bool> negate(xs.size(), false);
  for (size_t i = 0; i < coeff.size(); ++i) {
    if (coeff[i] == 1.f) continue;
    if (coeff[i] == -1.f && i > 0) {
      negate[i] = true;
      continue;
    }
    std::string k = c.constant(l, "coeff" + std::to_string(i), {1}, {coeff[i]});
    terms[i] = c.tmp(l, "scaled" + std::to_string(i), s);
    c.node(l, "Mul", {xs[i], k}, {terms[i]});
  }
  std::string acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    std::string y = i + 1 == terms.size() ? c.out(l, 0, s) : c.tmp(l, "acc" + std::to_string(i), s);
    c.node(l, negate[i] ? "Sub" : std_op, {acc, terms[i]}, {y});
    acc = y;
  }
}

// Scale / Bias parameters for x: from the second bottom, or from the layer's blobs.
static std::string per_slice_param(Ctx& c, const LayerDef& l, const Shape& xs, int axis, int64_t num_axes,
                                   size_t blob_index, const char* what) {
  if (num_axes < -1) c.fail(l, "num_axes must be >= -1");
  size_t n = num_axes == -1 ? xs.size() - axis : static_cast<size_t>(num_axes);
  if (axis + n > xs.size()) c.fail(l, "axis + num_axes exceed the input rank " + std::to_string(xs.size()));
  const CaffeBlob& b = c.blob(l, blob_index, product(xs, axis, axis + n), what);
  return c.constant(l, what, broadcast_shape(xs, axis, n), b.data);
}

static std::string second_bottom_param(Ctx& c, const LayerDef& l, const Shape& xs, int axis) {
  std::string p = c.in(l, 1);
  Shape ps = c.shape(p);
  if (axis + ps.size() > xs.size()) c.fail(l, "the second bottom " + shape_to_string(ps) + " does not fit the first");
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i] != xs[axis + i])
      c.fail(l, "the second bottom " + shape_to_string(ps) + " must match the first's dims from axis " + std::to_string(axis));
  Shape b = broadcast_shape(xs, axis, ps.size());
  if (b == ps) return p;
  std::string r = c.tmp(l, "param_reshaped", b);
  c.node(l, "Reshape", {p, c.constant_i64(l, "param_shape", b)}, {r});
  return r;
}

void convert_scale(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 2, 1, 1);
  const TextMsg& p = param_or_empty(l, "scale_param");
  std::string x = c.in(l, 0);
  Shape xs = c.shape(x);
  int axis = c.axis(l, p.get_int("axis", 1), xs.size());
  bool bias = p.get_bool("bias_term", false);
  std::string s = l.bottoms.size() == 2 ? second_bottom_param(c, l, xs, axis)
                                        : per_slice_param(c, l, xs, axis, p.get_int("num_axes", 1), 0, "scale");
  if (!bias) {
    c.node(l, "Mul", {x, s}, {c.out(l, 0, xs)});
    return;
  }
  // The bias blob follows the scale blob (index 1), or is blob 0 when the scale is a bottom.
  bool two = l.bottoms.size() == 2;
  int64_t bias_axes = two ? static_cast<int64_t>(c.shape(c.in(l, 1)).size()) : p.get_int("num_axes", 1);
  std::string b = per_slice_param(c, l, xs, axis, bias_axes, two ? 0 : 1, "bias");
  std::string t = c.tmp(l, "scaled", xs);
  c.node(l, "Mul", {x, s}, {t});
  c.node(l, "Add", {t, b}, {c.out(l, 0, xs)});
}

void convert_bias(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 2, 1, 1);
  const TextMsg& p = param_or_empty(l, "bias_param");
  std::string x = c.in(l, 0);
  Shape xs = c.shape(x);
  int axis = c.axis(l, p.get_int("axis", 1), xs.size());
  std::string b = l.bottoms.size() == 2 ? second_bottom_param(c, l, xs, axis)
                                        : per_slice_param(c, l, xs, axis, p.get_int("num_axes", 1), 0, "bias");
  c.node(l, "Add", {x, b}, {c.out(l, 0, xs)});
}

// BatchNorm holds mean, variance and a moving-average factor; the learned affine part is
// the Scale layer that follows. When that Scale reads only the BatchNorm's output, both
// become one BatchNormalization (scale, bias) that the fuse transform folds into the
// preceding Conv; otherwise BatchNormalization gets scale 1, bias 0.
void convert_batchnorm(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  const TextMsg& p = param_or_empty(l, "batch_norm_param");
  if (p.has("use_global_stats") && !p.get_bool("use_global_stats", true))
    c.unsupported(l, "use_global_stats: false (statistics of the batch at inference)");
  float eps = static_cast<float>(p.get_float("eps", 1e-5));
  std::string x = c.in(l, 0);
  Shape xs = c.shape(x);
  if (xs.size() < 2) c.fail(l, "input must have a channel axis (rank >= 2)");
  int64_t ch = xs[1];
  const CaffeBlob& mean = c.blob(l, 0, ch, "the mean");
  const CaffeBlob& var = c.blob(l, 1, ch, "the variance");
  const CaffeBlob& factor = c.blob(l, 2, 1, "the moving-average factor");
  float f = factor.data[0] == 0.f ? 0.f : 1.f / factor.data[0];
  std::vector<float> m(ch), v(ch), gamma(ch, 1.f), beta(ch, 0.f);
  for (int64_t i = 0; i < ch; ++i) {
    m[i] = mean.data[i] * f;
    v[i] = var.data[i] * f;
  }
  const LayerDef* next = c.next_layer();
  const LayerDef* fused = nullptr;
  if (next && next->type == "Scale" && next->bottoms.size() == 1 && next->bottoms[0] == l.tops[0] &&
      next->tops.size() == 1 &&
      // An in-place Scale overwrites the BatchNorm's version itself; otherwise no later
      // layer may read the BatchNorm's top.
      (next->tops[0] == l.tops[0] || !c.read_after(c.index() + 1, l.tops[0]))) {
    const TextMsg* sp = next->param("scale_param");
    int64_t axis = sp ? sp->get_int("axis", 1) : 1, num_axes = sp ? sp->get_int("num_axes", 1) : 1;
    if (axis == 1 && num_axes == 1) fused = next;
  }
  if (fused) {
    const TextMsg* sp = fused->param("scale_param");
    gamma = c.blob(*fused, 0, ch, "the scale").data;
    if (sp && sp->get_bool("bias_term", false)) beta = c.blob(*fused, 1, ch, "the bias").data;
  }
  std::vector<std::string> ins{x, c.constant(l, "gamma", {ch}, gamma), c.constant(l, "beta", {ch}, beta),
                               c.constant(l, "mean", {ch}, m), c.constant(l, "var", {ch}, v)};
  std::vector<Attr> attrs{Attr::Float("epsilon", eps)};
  if (!fused) {
    c.node(l, "BatchNormalization", ins, {c.out(l, 0, xs)}, attrs);
    return;
  }
  // The BatchNorm's own top is never materialised: the fused node writes the Scale's top.
  c.alias(l, 0, x);
  c.node(l, "BatchNormalization", ins, {c.out(*fused, 0, xs)}, attrs);
  c.note("folded Scale '" + fused->name + "' into BatchNorm '" + l.name + "'");
  c.skip_next();
}

void convert_softmax(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  int axis = c.axis(l, param_or_empty(l, "softmax_param").get_int("axis", 1), s.size());
  // Softmax (opset 13) normalises over exactly one axis, as Caffe does.
  c.node(l, "Softmax", {x}, {c.out(l, 0, s)}, {Attr::Int("axis", axis)});
}

}  // namespace caffe
}  // namespace minnow
