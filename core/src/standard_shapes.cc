// Shape functions of the standard (ONNX default domain) ops. They are written against
// the same C ABI and C++ wrapper an op plugin uses, and registered as built-in op
// definitions, so the core and third-party ops go through one path.
//
// Unknown dims (-1) propagate: during prepare a model with a symbolic batch is inferred
// with unknown dims; each session re-infers with the real input shapes.
#include "registry.h"

#include <minnow/plugin.hpp>

#include <algorithm>
#include <functional>
#include <numeric>

namespace minnow {

namespace {

using plugin::Node;
using plugin::PluginError;
using plugin::TensorRef;
using Dims = std::vector<int64_t>;

void out(const mn_shape_ctx* ctx, int i, int32_t dtype, const Dims& d) { plugin::set_output(ctx, i, dtype, d); }

void require_rank(const Node& n, int input, int rank_min, int rank_max = -1) {
  TensorRef t = n.input(input);
  if (!t.present()) n.fail("input " + std::to_string(input) + " is missing");
  if (t.rank() < 0) return;
  if (t.rank() < rank_min || (rank_max >= 0 && t.rank() > rank_max))
    n.fail("input " + std::to_string(input) + " has rank " + std::to_string(t.rank()));
}

int64_t norm_axis(const Node& n, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    n.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Reads a small int64 input's value (known constants / plan-time values), or false.
bool int_values(const Node& n, int input, Dims* v) {
  TensorRef t = n.input(input);
  if (!t.present() || !t.t->data || !t.shape_known()) return false;
  int64_t count = t.elements();
  v->resize(static_cast<size_t>(count));
  if (t.dtype() == MN_I64) {
    std::copy(t.data<int64_t>(), t.data<int64_t>() + count, v->begin());
  } else if (t.dtype() == MN_I32) {
    std::copy(t.data<int32_t>(), t.data<int32_t>() + count, v->begin());
  } else {
    return false;
  }
  return true;
}

// Numpy-style multidirectional broadcast of several shapes.
Dims broadcast(const Node& n, const std::vector<TensorRef>& ins) {
  size_t rank = 0;
  for (const auto& t : ins) rank = std::max(rank, static_cast<size_t>(std::max(t.rank(), 0)));
  Dims r(rank, 1);
  for (const auto& t : ins) {
    int off = static_cast<int>(rank) - t.rank();
    for (int i = 0; i < t.rank(); ++i) {
      int64_t d = t.dim(i), &o = r[off + i];
      if (d == 1) continue;
      if (o == 1) {
        o = d;
      } else if (d < 0 || o < 0) {
        o = (o < 0 && d < 0) ? -1 : std::max(o, d) > 1 ? std::max(o, d) : -1;
      } else if (o != d) {
        n.fail("shapes cannot be broadcast (dim " + std::to_string(o) + " vs " + std::to_string(d) + ")");
      }
    }
  }
  return r;
}

bool any_rank_unknown(const Node& n) {
  for (int i = 0; i < n.num_inputs(); ++i)
    if (n.input(i).present() && n.input(i).rank() < 0) return true;
  return false;
}

// ---- families ----------------------------------------------------------------------
void same_as_input0(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 0);
  out(ctx, 0, n.input(0).dtype(), n.input(0).shape());
  if (n.input(0).rank() < 0) ctx->set_output(ctx->host, 0, n.input(0).dtype(), -1, nullptr);
  // Dropout's optional mask output.
  if (n.num_outputs() > 1) out(ctx, 1, MN_BOOL, n.input(0).shape());
}

void elementwise_broadcast(const Node& n, const mn_shape_ctx* ctx, int32_t out_dtype) {
  std::vector<TensorRef> ins;
  for (int i = 0; i < n.num_inputs(); ++i)
    if (n.input(i).present()) ins.push_back(n.input(i));
  if (ins.empty()) n.fail("no inputs");
  if (any_rank_unknown(n)) {
    ctx->set_output(ctx->host, 0, out_dtype ? out_dtype : ins[0].dtype(), -1, nullptr);
    return;
  }
  out(ctx, 0, out_dtype ? out_dtype : ins[0].dtype(), broadcast(n, ins));
}

void gemm(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 2, 2);
  require_rank(n, 1, 2, 2);
  TensorRef a = n.input(0), b = n.input(1);
  int64_t m = n.attr_int("transA", 0) ? a.dim(1) : a.dim(0);
  int64_t ka = n.attr_int("transA", 0) ? a.dim(0) : a.dim(1);
  int64_t kb = n.attr_int("transB", 0) ? b.dim(1) : b.dim(0);
  int64_t nn = n.attr_int("transB", 0) ? b.dim(0) : b.dim(1);
  if (ka >= 0 && kb >= 0 && ka != kb)
    n.fail("inner dimensions differ: A has K=" + std::to_string(ka) + ", B has K=" + std::to_string(kb));
  out(ctx, 0, a.dtype(), {m, nn});
}

void matmul(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 1);
  require_rank(n, 1, 1);
  TensorRef a = n.input(0), b = n.input(1);
  if (a.rank() < 0 || b.rank() < 0) {
    ctx->set_output(ctx->host, 0, a.dtype(), -1, nullptr);
    return;
  }
  Dims as = a.shape(), bs = b.shape();
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  int64_t k1 = as.back(), k2 = bs[bs.size() - 2];
  if (k1 >= 0 && k2 >= 0 && k1 != k2)
    n.fail("inner dimensions differ: " + std::to_string(k1) + " vs " + std::to_string(k2));
  // Broadcast the batch dims.
  Dims ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t r = std::max(ab.size(), bb.size());
  Dims batch(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i + ab.size() >= r ? ab[i + ab.size() - r] : 1;
    int64_t y = i + bb.size() >= r ? bb[i + bb.size() - r] : 1;
    if (x == 1) batch[i] = y;
    else if (y == 1) batch[i] = x;
    else if (x < 0 || y < 0) batch[i] = std::max(x, y) > 1 ? std::max(x, y) : -1;
    else if (x != y) n.fail("batch dimensions cannot be broadcast");
    else batch[i] = x;
  }
  Dims o = batch;
  if (!a1) o.push_back(as[as.size() - 2]);
  if (!b1) o.push_back(bs.back());
  out(ctx, 0, a.dtype(), o);
}

// Output size of a sliding window along one axis (conv / pool).
int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pad_total, bool ceil_mode) {
  if (in < 0) return -1;
  int64_t eff = dil * (k - 1) + 1;
  int64_t span = in + pad_total - eff;
  if (span < 0) return 0;
  int64_t o = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
  // ONNX/Caffe: the last window must start inside the input or left padding.
  if (ceil_mode && (o - 1) * stride >= in + pad_total / 2 + (pad_total % 2)) --o;
  return o;
}

// Spatial output dims for Conv / pools, honouring auto_pad.
Dims spatial_out(const Node& n, const Dims& in_spatial, const Dims& kernel, bool ceil_mode) {
  size_t s = in_spatial.size();
  Dims strides = n.attr_ints("strides", Dims(s, 1));
  Dims dil = n.attr_ints("dilations", Dims(s, 1));
  Dims pads = n.attr_ints("pads", Dims(2 * s, 0));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (strides.size() != s || dil.size() != s || pads.size() != 2 * s || kernel.size() != s)
    n.fail("strides / dilations / pads / kernel do not match " + std::to_string(s) + " spatial dims");
  for (size_t i = 0; i < s; ++i)
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0) n.fail("strides, dilations and kernel must be positive");
  Dims o(s);
  for (size_t i = 0; i < s; ++i) {
    int64_t in = in_spatial[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o[i] = in < 0 ? -1 : (in + strides[i] - 1) / strides[i];
    } else if (auto_pad == "VALID") {
      o[i] = window_out(in, kernel[i], strides[i], dil[i], 0, false);
    } else if (auto_pad == "NOTSET" || auto_pad.empty()) {
      o[i] = window_out(in, kernel[i], strides[i], dil[i], pads[i] + pads[i + s], ceil_mode);
    } else {
      n.fail("unknown auto_pad '" + auto_pad + "'");
    }
  }
  return o;
}

void conv(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 3, 5);
  require_rank(n, 1, 3, 5);
  TensorRef x = n.input(0), w = n.input(1);
  if (x.rank() < 0 || w.rank() < 0) {
    ctx->set_output(ctx->host, 0, x.dtype(), -1, nullptr);
    return;
  }
  if (x.rank() != w.rank()) n.fail("input and weight ranks differ");
  Dims xs = x.shape(), ws = w.shape();
  int64_t group = n.attr_int("group", 1);
  if (group <= 0) n.fail("group must be positive");
  if (xs[1] >= 0 && ws[1] >= 0 && xs[1] != ws[1] * group)
    n.fail("input has " + std::to_string(xs[1]) + " channels, weight expects " + std::to_string(ws[1] * group) + " (group " + std::to_string(group) + ")");
  if (ws[0] >= 0 && ws[0] % group != 0) n.fail("output channels not divisible by group");
  Dims kernel = n.attr_ints("kernel_shape", Dims(ws.begin() + 2, ws.end()));
  Dims sp = spatial_out(n, Dims(xs.begin() + 2, xs.end()), kernel, false);
  Dims o{xs[0], ws[0]};
  o.insert(o.end(), sp.begin(), sp.end());
  out(ctx, 0, x.dtype(), o);
}

void pool(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 3, 5);
  TensorRef x = n.input(0);
  if (x.rank() < 0) {
    ctx->set_output(ctx->host, 0, x.dtype(), -1, nullptr);
    return;
  }
  Dims xs = x.shape();
  Dims kernel = n.attr_ints("kernel_shape");
  if (kernel.size() != xs.size() - 2) n.fail("kernel_shape must have one entry per spatial dim");
  Dims sp = spatial_out(n, Dims(xs.begin() + 2, xs.end()), kernel, n.attr_int("ceil_mode", 0) != 0);
  Dims o{xs[0], xs[1]};
  o.insert(o.end(), sp.begin(), sp.end());
  out(ctx, 0, x.dtype(), o);
  if (n.num_outputs() > 1) out(ctx, 1, MN_I64, o);
}

void global_pool(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 3);
  Dims xs = n.input(0).shape();
  for (size_t i = 2; i < xs.size(); ++i) xs[i] = 1;
  out(ctx, 0, n.input(0).dtype(), xs);
}

void reshape(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  Dims target;
  if (n.op_version() < 5 || !n.has_input(1)) {
    target = n.attr_ints("shape");
  } else if (!int_values(n, 1, &target)) {
    // Target known only at run time: rank from the shape tensor's length if known.
    TensorRef s = n.input(1);
    if (s.rank() == 1 && s.dim(0) >= 0) {
      out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(s.dim(0)), -1));
    } else {
      ctx->set_output(ctx->host, 0, x.dtype(), -1, nullptr);
    }
    return;
  }
  bool allowzero = n.attr_int("allowzero", 0) != 0;
  int64_t total = x.rank() >= 0 && x.shape_known() ? x.elements() : -1;
  Dims o = target;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < o.size(); ++i) {
    if (o[i] == 0 && !allowzero) {
      if (static_cast<int>(i) >= x.rank()) n.fail("shape has 0 at a position beyond the input's rank");
      o[i] = x.dim(static_cast<int>(i));
    }
    if (o[i] == -1) {
      if (infer >= 0) n.fail("more than one -1 in the target shape");
      infer = static_cast<int>(i);
    } else if (o[i] < -1) {
      n.fail("invalid dimension " + std::to_string(o[i]) + " in the target shape");
    } else if (o[i] >= 0) {
      known *= o[i];
    }
  }
  bool unknown = false;
  for (size_t i = 0; i < o.size(); ++i)
    if (static_cast<int>(i) != infer && o[i] < 0) unknown = true;
  if (infer >= 0) {
    if (total >= 0 && !unknown) {
      if (known == 0 || total % known != 0)
        n.fail("cannot reshape " + std::to_string(total) + " elements to the target shape");
      o[infer] = total / known;
    }
  } else if (total >= 0 && !unknown && known != total) {
    n.fail("cannot reshape " + std::to_string(total) + " elements into " + std::to_string(known));
  }
  out(ctx, 0, x.dtype(), o);
}

void flatten(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 0);
  TensorRef x = n.input(0);
  int64_t axis = norm_axis(n, n.attr_int("axis", 1), x.rank() + 1);
  int64_t a = 1, b = 1;
  for (int i = 0; i < x.rank(); ++i) {
    int64_t& p = i < axis ? a : b;
    p = (p < 0 || x.dim(i) < 0) ? -1 : p * x.dim(i);
  }
  out(ctx, 0, x.dtype(), {a, b});
}

void softmax(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 1);
  norm_axis(n, n.attr_int("axis", n.op_version() >= 13 ? -1 : 1), std::max(n.input(0).rank(), 1));
  same_as_input0(n, ctx);
}

void concat(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x0 = n.input(0);
  if (any_rank_unknown(n)) {
    ctx->set_output(ctx->host, 0, x0.dtype(), -1, nullptr);
    return;
  }
  int64_t axis = norm_axis(n, n.attr_int("axis", 0), x0.rank());
  Dims o = x0.shape();
  for (int i = 1; i < n.num_inputs(); ++i) {
    TensorRef t = n.input(i);
    if (t.rank() != x0.rank()) n.fail("inputs have different ranks");
    for (int d = 0; d < t.rank(); ++d) {
      if (d == axis) {
        o[d] = (o[d] < 0 || t.dim(d) < 0) ? -1 : o[d] + t.dim(d);
      } else if (o[d] >= 0 && t.dim(d) >= 0 && o[d] != t.dim(d)) {
        n.fail("input " + std::to_string(i) + " differs in dimension " + std::to_string(d));
      } else if (o[d] < 0) {
        o[d] = t.dim(d);
      }
    }
  }
  out(ctx, 0, x0.dtype(), o);
  // Concat of known small values (shape arithmetic) is evaluated at plan time by folding.
}

void transpose(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  Dims perm = n.attr_ints("perm");
  if (perm.empty())
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != x.rank()) n.fail("perm has the wrong length");
  Dims o(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = norm_axis(n, perm[i], x.rank());
    if (seen[p]) n.fail("perm repeats an axis");
    seen[p] = true;
    o[i] = x.dim(static_cast<int>(p));
  }
  out(ctx, 0, x.dtype(), o);
}

void squeeze(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  Dims axes;
  bool have = n.op_version() >= 13 ? int_values(n, 1, &axes) : (axes = n.attr_ints("axes"), true);
  if (n.op_version() >= 13 && n.has_input(1) && !have) n.fail("axes must be a constant");
  std::vector<bool> drop(x.rank(), false);
  if (axes.empty()) {
    for (int i = 0; i < x.rank(); ++i) drop[i] = x.dim(i) == 1;
  } else {
    for (int64_t a : axes) {
      int64_t k = norm_axis(n, a, x.rank());
      if (x.dim(static_cast<int>(k)) > 1) n.fail("cannot squeeze a dimension of size " + std::to_string(x.dim(static_cast<int>(k))));
      drop[k] = true;
    }
  }
  Dims o;
  for (int i = 0; i < x.rank(); ++i)
    if (!drop[i]) o.push_back(x.dim(i));
  out(ctx, 0, x.dtype(), o);
}

void unsqueeze(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  Dims axes;
  if (n.op_version() >= 13) {
    if (!int_values(n, 1, &axes)) n.fail("axes must be a constant");
  } else {
    axes = n.attr_ints("axes");
  }
  int64_t r = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> ins(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    int64_t k = norm_axis(n, a, r);
    if (ins[k]) n.fail("axes repeat");
    ins[k] = true;
  }
  Dims o;
  int src = 0;
  for (int64_t i = 0; i < r; ++i) o.push_back(ins[i] ? 1 : x.dim(src++));
  out(ctx, 0, x.dtype(), o);
}

void shape_op(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) {
    out(ctx, 0, MN_I64, {-1});
    return;
  }
  int64_t r = x.rank();
  int64_t start = n.attr_int("start", 0), end = n.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Dims v;
  for (int64_t i = start; i < end; ++i) v.push_back(x.dim(static_cast<int>(i)));
  out(ctx, 0, MN_I64, {static_cast<int64_t>(v.size())});
  bool known = std::all_of(v.begin(), v.end(), [](int64_t d) { return d >= 0; });
  if (known) ctx->set_output_value(ctx->host, 0, v.data(), v.size() * sizeof(int64_t));
}

void constant_op(const Node& n, const mn_shape_ctx* ctx) {
  const mn_tensor* t = n.attr_tensor("value");
  if (!t) n.fail("only the 'value' form of Constant is supported");
  TensorRef r{t};
  out(ctx, 0, t->dtype, r.shape());
  size_t bytes = static_cast<size_t>(r.elements()) * plugin::dtype_size(t->dtype);
  if (t->data) ctx->set_output_value(ctx->host, 0, t->data, bytes);
}

void batchnorm(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 2);
  for (int i = 1; i <= 4; ++i) require_rank(n, i, 1, 1);
  same_as_input0(n, ctx);
}

// ---- registration ------------------------------------------------------------------
using ShapeFn = void (*)(const Node&, const mn_shape_ctx*);

struct StdOp {
  const char* name;
  int since, max;
  ShapeFn fn;
};

void unary(const Node& n, const mn_shape_ctx* c) { same_as_input0(n, c); }
void binary(const Node& n, const mn_shape_ctx* c) { elementwise_broadcast(n, c, 0); }
void compare(const Node& n, const mn_shape_ctx* c) { elementwise_broadcast(n, c, MN_BOOL); }
void where(const Node& n, const mn_shape_ctx* c) {
  std::vector<TensorRef> ins{n.input(0), n.input(1), n.input(2)};
  if (any_rank_unknown(n)) {
    c->set_output(c->host, 0, n.input(1).dtype(), -1, nullptr);
    return;
  }
  out(c, 0, n.input(1).dtype(), broadcast(n, ins));
}

const StdOp kStdOps[] = {
    {"Gemm", 1, 13, gemm},
    {"MatMul", 1, 13, matmul},
    {"Conv", 1, 11, conv},
    {"MaxPool", 1, 12, pool},
    {"AveragePool", 1, 19, pool},
    {"GlobalAveragePool", 1, 1, global_pool},
    {"GlobalMaxPool", 1, 1, global_pool},
    {"Reshape", 1, 19, reshape},
    {"Flatten", 1, 13, flatten},
    {"Softmax", 1, 13, softmax},
    {"LogSoftmax", 1, 13, softmax},
    {"Concat", 1, 13, concat},
    {"Transpose", 1, 13, transpose},
    {"Squeeze", 1, 13, squeeze},
    {"Unsqueeze", 1, 13, unsqueeze},
    {"Shape", 1, 19, shape_op},
    {"Constant", 1, 19, constant_op},
    {"BatchNormalization", 1, 15, batchnorm},
    {"Add", 1, 14, binary}, {"Sub", 1, 14, binary}, {"Mul", 1, 14, binary},
    {"Div", 1, 14, binary}, {"Pow", 1, 15, binary}, {"Max", 1, 13, binary},
    {"Min", 1, 13, binary}, {"Sum", 1, 13, binary}, {"PRelu", 1, 16, binary},
    {"Equal", 1, 19, compare}, {"Less", 1, 13, compare}, {"Greater", 1, 13, compare},
    {"Where", 9, 16, where},
    {"Relu", 1, 14, unary}, {"Sigmoid", 1, 13, unary}, {"Tanh", 1, 13, unary},
    {"Exp", 1, 13, unary}, {"Log", 1, 13, unary}, {"Sqrt", 1, 13, unary},
    {"Neg", 1, 13, unary}, {"Abs", 1, 13, unary}, {"Clip", 1, 13, unary},
    {"LeakyRelu", 1, 16, unary}, {"Elu", 1, 6, unary}, {"Softplus", 1, 1, unary},
    {"HardSigmoid", 1, 6, unary}, {"HardSwish", 14, 14, unary}, {"Identity", 1, 19, unary},
    {"Dropout", 1, 13, unary}, {"Not", 1, 1, unary},
};

}  // namespace

constexpr int kNewestValidatedOpset = 18;

void register_standard_ops(Registry& registry) {
  for (const StdOp& op : kStdOps) {
    mn_op_def d{};
    d.struct_size = sizeof(mn_op_def);
    d.domain = "";
    d.name = op.name;
    d.since_version = op.since;
    // A node's op_version is the model's opset for the op's domain (as ONNX opset_import):
    // a definition introduced at `since` serves every later opset up to the newest one we
    // validated, unless a newer definition of the op replaced it.
    d.max_version = std::max(op.max, kNewestValidatedOpset);
    d.user = reinterpret_cast<void*>(op.fn);
    d.infer_shapes = [](void* user, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
      return plugin::guarded(err, [&] {
        reinterpret_cast<ShapeFn>(user)(Node(node), ctx);
        return MN_OK;
      });
    };
    registry.add_builtin_op(d);
  }
}

}  // namespace minnow
