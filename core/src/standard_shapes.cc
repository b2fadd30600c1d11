// Shape functions of the standard (ONNX default domain) ops. They are written against
// the same C ABI and C++ wrapper an op plugin uses, and registered as built-in op
// definitions, so the core and third-party ops go through one path.
//
// Unknown dims (-1) propagate: during prepare a model with a symbolic batch is inferred
// with unknown dims; each session re-infers with the real input shapes.
#include "registry.h"

#include <minnow/plugin.hpp>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <functional>
#include <initializer_list>
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
  if (x.rank() < 0) {
    out(ctx, 0, x.dtype(), {-1, -1});
    return;
  }
  // axis lies in [-r, r]; a negative axis counts from the rank r (not r + 1).
  int64_t axis = n.attr_int("axis", 1);
  if (axis < -x.rank() || axis > x.rank())
    n.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(x.rank()));
  if (axis < 0) axis += x.rank();
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
  if (x.rank() < 0) {
    if (perm.empty()) ctx->set_output(ctx->host, 0, x.dtype(), -1, nullptr);
    else out(ctx, 0, x.dtype(), Dims(perm.size(), -1));
    return;
  }
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
  if ((n.op_version() >= 13 && n.has_input(1) && !have) || x.rank() < 0) {
    // Axes known only at run time (planning resolves them): rank unknown until then.
    ctx->set_output(ctx->host, 0, x.dtype(), -1, nullptr);
    return;
  }
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
    if (!n.has_input(1)) n.fail("axes input is missing");
    if (!int_values(n, 1, &axes)) {
      TensorRef a = n.input(1);
      if (x.rank() >= 0 && a.rank() == 1 && a.dim(0) >= 0)
        out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(x.rank() + a.dim(0)), -1));
      else
        ctx->set_output(ctx->host, 0, x.dtype(), -1, nullptr);
      return;
    }
  } else {
    axes = n.attr_ints("axes");
  }
  if (x.rank() < 0) {
    ctx->set_output(ctx->host, 0, x.dtype(), -1, nullptr);
    return;
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


// ---- ONNX ops of issue 3 ----------------------------------------------------------
// Outputs of unknown rank (everything unknown until the session plans with real values).
void unknown_outputs(const Node& n, const mn_shape_ctx* ctx, int32_t dtype) {
  for (int i = 0; i < n.num_outputs(); ++i) ctx->set_output(ctx->host, i, dtype, -1, nullptr);
}

// ONNX TensorProto element type (Cast 'to', ...) -> mn_dtype; 0 if not representable.
int32_t onnx_elem_type(int64_t t) {
  switch (t) {
    case 1: return MN_F32;   case 2: return MN_U8;    case 3: return MN_I8;    case 4: return MN_U16;
    case 5: return MN_I16;   case 6: return MN_I32;   case 7: return MN_I64;   case 9: return MN_BOOL;
    case 10: return MN_F16;  case 11: return MN_F64;  case 12: return MN_U32;  case 13: return MN_U64;
    case 16: return MN_BF16;
    default: return 0;
  }
}

int64_t mul_dim(int64_t a, int64_t b) { return (a < 0 || b < 0) ? -1 : a * b; }

void conv_transpose(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 3, 5);
  require_rank(n, 1, 3, 5);
  TensorRef x = n.input(0), w = n.input(1);
  if (x.rank() < 0 || w.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  if (x.rank() != w.rank()) n.fail("input and weight ranks differ");
  const size_t s = static_cast<size_t>(x.rank() - 2);
  Dims xs = x.shape(), ws = w.shape();
  int64_t group = n.attr_int("group", 1);
  if (group <= 0) n.fail("group must be positive");
  if (xs[1] >= 0 && ws[0] >= 0 && xs[1] != ws[0])
    n.fail("input has " + std::to_string(xs[1]) + " channels, weight expects " + std::to_string(ws[0]));
  Dims kernel = n.attr_ints("kernel_shape", Dims(ws.begin() + 2, ws.end()));
  Dims strides = n.attr_ints("strides", Dims(s, 1));
  Dims dil = n.attr_ints("dilations", Dims(s, 1));
  Dims pads = n.attr_ints("pads", Dims(2 * s, 0));
  Dims out_pad = n.attr_ints("output_padding", Dims(s, 0));
  Dims out_shape = n.attr_ints("output_shape");
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (kernel.size() != s || strides.size() != s || dil.size() != s || pads.size() != 2 * s || out_pad.size() != s)
    n.fail("kernel_shape / strides / dilations / pads / output_padding do not match " + std::to_string(s) + " spatial dims");
  if (!out_shape.empty() && out_shape.size() != s && out_shape.size() != s + 2)
    n.fail("output_shape must have one entry per spatial dim");
  Dims o{xs[0], mul_dim(ws[1], group)};
  for (size_t i = 0; i < s; ++i) {
    if (!out_shape.empty()) {
      o.push_back(out_shape[out_shape.size() - s + i]);
    } else if (xs[i + 2] < 0) {
      o.push_back(-1);
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o.push_back(xs[i + 2] * strides[i]);
    } else {
      int64_t pad = auto_pad == "VALID" ? 0 : pads[i] + pads[i + s];
      int64_t v = strides[i] * (xs[i + 2] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1 - pad;
      if (v < 0) n.fail("output size is negative");
      o.push_back(v);
    }
  }
  out(ctx, 0, x.dtype(), o);
}

void split(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  const int64_t axis = norm_axis(n, n.attr_int("axis", 0), x.rank());
  const int64_t d = x.dim(static_cast<int>(axis));
  const int64_t k = n.num_outputs();
  Dims sizes;
  bool known = true;
  if (n.op_version() >= 13) {
    if (n.has_input(1)) known = int_values(n, 1, &sizes);
  } else {
    sizes = n.attr_ints("split");
  }
  if (known && sizes.empty()) {
    if (d < 0) {
      known = false;
    } else if (n.op_version() >= 18 && n.has_attr("num_outputs")) {
      int64_t chunk = (d + k - 1) / k;
      for (int64_t i = 0; i < k; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, d - i * chunk)));
    } else {
      if (d % k != 0) n.fail("dimension " + std::to_string(d) + " does not split evenly into " + std::to_string(k) + " outputs");
      sizes.assign(static_cast<size_t>(k), d / k);
    }
  }
  if (known) {
    if (static_cast<int64_t>(sizes.size()) != k) n.fail("split has " + std::to_string(sizes.size()) + " entries for " + std::to_string(k) + " outputs");
    int64_t sum = 0;
    for (int64_t v : sizes) {
      if (v < 0) n.fail("negative split size");
      sum += v;
    }
    if (d >= 0 && sum != d) n.fail("split sizes sum to " + std::to_string(sum) + ", dimension is " + std::to_string(d));
  }
  for (int64_t i = 0; i < k; ++i) {
    Dims o = x.shape();
    o[axis] = known ? sizes[i] : -1;
    out(ctx, static_cast<int>(i), x.dtype(), o);
  }
}

void slice(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  const int64_t r = x.rank();
  Dims starts, ends, axes, steps;
  bool known = true;
  if (n.op_version() < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    known = int_values(n, 1, &starts) && int_values(n, 2, &ends);
    if (n.has_input(3) && !int_values(n, 3, &axes)) {
      out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(r), -1));
      return;
    }
    if (n.has_input(4) && !int_values(n, 4, &steps)) known = false;
  }
  if (axes.empty()) {
    size_t cnt = known ? starts.size() : 0;
    if (!known) {
      // Without axes, starts' length says which leading axes change.
      TensorRef st = n.input(1);
      if (st.rank() != 1 || st.dim(0) < 0) {
        out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(r), -1));
        return;
      }
      cnt = static_cast<size_t>(st.dim(0));
    }
    for (size_t i = 0; i < cnt; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  Dims o = x.shape();
  if (!known) {
    for (int64_t a : axes) o[norm_axis(n, a, r)] = -1;
    out(ctx, 0, x.dtype(), o);
    return;
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.fail("starts, ends, axes and steps differ in length");
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = norm_axis(n, axes[i], r);
    if (seen[a]) n.fail("axis " + std::to_string(axes[i]) + " repeats");
    seen[a] = true;
    int64_t d = o[a], st = steps[i];
    if (st == 0) n.fail("step is 0");
    if (d < 0) continue;
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += d;
    if (e < 0) e += d;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      o[a] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      o[a] = b > e ? (b - e - st - 1) / -st : 0;
    }
  }
  out(ctx, 0, x.dtype(), o);
}

void gather(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0), idx = n.input(1);
  if (!idx.present()) n.fail("indices input is missing");
  if (idx.dtype() != MN_I64 && idx.dtype() != MN_I32) n.fail("indices must be int64 or int32");
  if (x.rank() < 0 || idx.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  if (x.rank() < 1) n.fail("data must have rank >= 1");
  int64_t axis = norm_axis(n, n.attr_int("axis", 0), x.rank());
  Dims xs = x.shape(), o(xs.begin(), xs.begin() + axis), is = idx.shape();
  o.insert(o.end(), is.begin(), is.end());
  o.insert(o.end(), xs.begin() + axis + 1, xs.end());
  if (o.size() > MN_MAX_RANK) n.fail("output rank above " + std::to_string(MN_MAX_RANK));
  out(ctx, 0, x.dtype(), o);
  // Index checks where both are known (a bad index is an error, not a silent read).
  Dims iv;
  int64_t d = xs[axis];
  if (d >= 0 && int_values(n, 1, &iv))
    for (int64_t v : iv)
      if (v < -d || v >= d) n.fail("index " + std::to_string(v) + " out of range for a dimension of " + std::to_string(d));
}

void expand(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0), s = n.input(1);
  Dims target;
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  if (!int_values(n, 1, &target)) {
    if (s.rank() == 1 && s.dim(0) >= 0)
      out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(std::max<int64_t>(s.dim(0), x.rank())), -1));
    else
      unknown_outputs(n, ctx, x.dtype());
    return;
  }
  const size_t r = std::max(target.size(), static_cast<size_t>(x.rank()));
  Dims o(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t a = i + x.rank() >= r ? x.dim(static_cast<int>(i + x.rank() - r)) : 1;
    int64_t b = i + target.size() >= r ? target[i + target.size() - r] : 1;
    if (b < 0) n.fail("shape has a negative dimension");
    if (a == 1) o[i] = b;
    else if (b == 1 || a == b) o[i] = a;
    else if (a < 0) o[i] = b;
    else n.fail("cannot expand dimension " + std::to_string(a) + " to " + std::to_string(b));
  }
  out(ctx, 0, x.dtype(), o);
}

void constant_of_shape(const Node& n, const mn_shape_ctx* ctx) {
  const mn_tensor* v = n.attr_tensor("value");
  int32_t dtype = v ? v->dtype : MN_F32;
  if (v && TensorRef{v}.elements() != 1) n.fail("value must hold one element");
  Dims s;
  if (!int_values(n, 0, &s)) {
    TensorRef in = n.input(0);
    if (in.rank() == 1 && in.dim(0) >= 0) out(ctx, 0, dtype, Dims(static_cast<size_t>(in.dim(0)), -1));
    else unknown_outputs(n, ctx, dtype);
    return;
  }
  for (int64_t d : s)
    if (d < 0) n.fail("negative dimension " + std::to_string(d));
  out(ctx, 0, dtype, s);
}

void pad(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  const int64_t r = x.rank();
  Dims pads, axes;
  if (n.op_version() < 11) {
    pads = n.attr_ints("pads");
  } else if (!int_values(n, 1, &pads)) {
    out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(r), -1));
    return;
  }
  if (n.op_version() >= 18 && n.has_input(3)) {
    if (!int_values(n, 3, &axes)) {
      out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(r), -1));
      return;
    }
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    n.fail("pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * axes.size()));
  Dims o = x.shape();
  const size_t k = axes.size();
  for (size_t i = 0; i < k; ++i) {
    int64_t a = norm_axis(n, axes[i], r);
    if (o[a] < 0) continue;
    o[a] += pads[i] + pads[i + k];
    if (o[a] < 0) n.fail("padding makes dimension " + std::to_string(a) + " negative");
  }
  out(ctx, 0, x.dtype(), o);
}

// Resize-10: (X, scales); Resize-11/13: (X, roi, scales, sizes); Upsample-7: scales
// attribute; Upsample-9: (X, scales). Output dims floor(in * scale), times the roi's extent
// under tf_crop_and_resize.
void resize(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  const int64_t r = x.rank();
  const bool upsample = n.op() == "Upsample";
  const bool v11 = !upsample && n.op_version() >= 11;
  Dims sizes;
  if (v11 && n.has_input(3) && n.input(3).elements() > 0) {
    if (!int_values(n, 3, &sizes)) {
      out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(r), -1));
      return;
    }
    if (static_cast<int64_t>(sizes.size()) != r) n.fail("sizes must have one entry per dimension");
    for (int64_t v : sizes)
      if (v < 0) n.fail("negative size");
    out(ctx, 0, x.dtype(), sizes);
    return;
  }
  std::vector<float> scales;
  if (upsample && n.op_version() < 9) {
    scales = n.attr_floats("scales");
    if (scales.empty()) n.fail("attribute scales is required");
  } else {
    TensorRef sc = n.input(v11 ? 2 : 1);
    if (!sc.present()) n.fail("either scales or sizes must be given");
    if (sc.dtype() != MN_F32) n.fail("scales must be float32");
    if (!sc.t->data || !sc.shape_known()) {
      out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(r), -1));
      return;
    }
    scales.assign(sc.data<float>(), sc.data<float>() + sc.elements());
  }
  if (static_cast<int64_t>(scales.size()) != r) n.fail("scales must have one entry per dimension");
  std::vector<double> extent(static_cast<size_t>(r), 1.0);
  if (v11 && n.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
    TensorRef roi = n.input(1);
    if (!roi.present() || !roi.t->data || roi.dtype() != MN_F32) {
      out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(r), -1));
      return;
    }
    if (roi.elements() != 2 * r) n.fail("roi must have two entries per dimension");
    for (int64_t i = 0; i < r; ++i) extent[i] = static_cast<double>(roi.data<float>()[r + i]) - roi.data<float>()[i];
  }
  Dims o = x.shape();
  for (int64_t i = 0; i < r; ++i) {
    float f = scales[i];
    if (!(f > 0)) n.fail("scales must be positive");
    if (o[i] >= 0)
      o[i] = static_cast<int64_t>(std::floor(static_cast<double>(o[i]) * static_cast<double>(f) * extent[i]));
  }
  out(ctx, 0, x.dtype(), o);
}

// Reductions: axes as an attribute, or as input 1 (ReduceSum from 13, the others from 18).
void reduce(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  int32_t dtype = x.dtype();
  if (x.rank() < 0) return unknown_outputs(n, ctx, dtype);
  const int64_t r = x.rank();
  const bool keep = n.attr_int("keepdims", 1) != 0;
  const bool axes_input = (n.op() == "ReduceSum" && n.op_version() >= 13) || n.op_version() >= 18;
  Dims axes;
  if (axes_input) {
    if (n.has_input(1) && !int_values(n, 1, &axes)) {
      if (keep) out(ctx, 0, dtype, Dims(static_cast<size_t>(r), -1));
      else unknown_outputs(n, ctx, dtype);
      return;
    }
    if (axes.empty() && n.attr_int("noop_with_empty_axes", 0) != 0) {
      out(ctx, 0, dtype, x.shape());
      return;
    }
  } else {
    axes = n.attr_ints("axes");
  }
  std::vector<bool> red(static_cast<size_t>(r), axes.empty());
  for (int64_t a : axes) red[norm_axis(n, a, r)] = true;
  Dims o;
  for (int64_t i = 0; i < r; ++i) {
    if (!red[i]) o.push_back(x.dim(static_cast<int>(i)));
    else if (keep) o.push_back(1);
  }
  out(ctx, 0, dtype, o);
}

void arg_reduce(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, MN_I64);
  if (x.rank() < 1) n.fail("input must have rank >= 1");
  int64_t axis = norm_axis(n, n.attr_int("axis", 0), x.rank());
  Dims o = x.shape();
  if (n.attr_int("keepdims", 1)) o[axis] = 1;
  else o.erase(o.begin() + axis);
  out(ctx, 0, MN_I64, o);
}

void cast(const Node& n, const mn_shape_ctx* ctx) {
  int32_t to = onnx_elem_type(n.attr_int("to", 0));
  if (!to) n.fail("unsupported target type " + std::to_string(n.attr_int("to", 0)));
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, to);
  out(ctx, 0, to, x.shape());
}

void tile(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  Dims rep;
  if (!int_values(n, 1, &rep)) {
    out(ctx, 0, x.dtype(), Dims(static_cast<size_t>(x.rank()), -1));
    return;
  }
  if (static_cast<int>(rep.size()) != x.rank()) n.fail("repeats must have one entry per dimension");
  Dims o = x.shape();
  for (size_t i = 0; i < o.size(); ++i) {
    if (rep[i] < 0) n.fail("negative repeat");
    o[i] = mul_dim(o[i], rep[i]);
  }
  out(ctx, 0, x.dtype(), o);
}

void topk(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) {
    ctx->set_output(ctx->host, 0, x.dtype(), -1, nullptr);
    if (n.num_outputs() > 1) ctx->set_output(ctx->host, 1, MN_I64, -1, nullptr);
    return;
  }
  int64_t axis = norm_axis(n, n.attr_int("axis", -1), x.rank());
  int64_t k = -1;
  if (n.op_version() < 10) {
    k = n.attr_int("k", -1);
  } else {
    Dims kv;
    if (int_values(n, 1, &kv)) {
      if (kv.size() != 1) n.fail("K must hold one value");
      k = kv[0];
    }
  }
  int64_t d = x.dim(static_cast<int>(axis));
  if (k >= 0 && d >= 0 && k > d) n.fail("K = " + std::to_string(k) + " exceeds the axis size " + std::to_string(d));
  Dims o = x.shape();
  o[axis] = k;
  out(ctx, 0, x.dtype(), o);
  if (n.num_outputs() > 1) out(ctx, 1, MN_I64, o);
}

void depth_to_space(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 4, 4);
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) n.fail("blocksize must be positive");
  int64_t c = x.dim(1);
  if (c >= 0 && c % (b * b) != 0) n.fail("channels " + std::to_string(c) + " not divisible by blocksize^2");
  out(ctx, 0, x.dtype(), {x.dim(0), c < 0 ? -1 : c / (b * b), mul_dim(x.dim(2), b), mul_dim(x.dim(3), b)});
}

void space_to_depth(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 4, 4);
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) n.fail("blocksize must be positive");
  Dims o{x.dim(0), mul_dim(x.dim(1), b * b), -1, -1};
  for (int i = 2; i < 4; ++i) {
    int64_t d = x.dim(i);
    if (d >= 0 && d % b != 0) n.fail("spatial size " + std::to_string(d) + " not divisible by blocksize");
    o[i] = d < 0 ? -1 : d / b;
  }
  out(ctx, 0, x.dtype(), o);
}

void range_op(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef s = n.input(0);
  for (int i = 0; i < 3; ++i) {
    TensorRef t = n.input(i);
    if (!t.present()) n.fail("Range takes start, limit and delta");
    if (t.rank() > 0 && t.elements() != 1) n.fail("start, limit and delta must be scalars");
  }
  int64_t count = -1;
  auto scalar = [&](int i, double* v) {
    TensorRef t = n.input(i);
    if (!t.t->data) return false;
    switch (t.dtype()) {
      case MN_F32: *v = t.data<float>()[0]; return true;
      case MN_F64: *v = t.data<double>()[0]; return true;
      case MN_I64: *v = static_cast<double>(t.data<int64_t>()[0]); return true;
      case MN_I32: *v = t.data<int32_t>()[0]; return true;
      case MN_I16: *v = t.data<int16_t>()[0]; return true;
      default: return false;
    }
  };
  double a, b, d;
  if (scalar(0, &a) && scalar(1, &b) && scalar(2, &d)) {
    if (d == 0) n.fail("delta is 0");
    count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((b - a) / d)));
  }
  out(ctx, 0, s.dtype(), {count});
}

void size_op(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  out(ctx, 0, MN_I64, {});
  if (x.rank() >= 0 && x.shape_known()) {
    int64_t v = x.elements();
    ctx->set_output_value(ctx->host, 0, &v, sizeof v);
  }
}

void layer_norm(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, x.dtype());
  int64_t axis = norm_axis(n, n.attr_int("axis", -1), x.rank());
  out(ctx, 0, x.dtype(), x.shape());
  Dims stat = x.shape();
  for (int64_t i = axis; i < x.rank(); ++i) stat[i] = 1;
  int32_t st = onnx_elem_type(n.attr_int("stash_type", 1));
  for (int i = 1; i < n.num_outputs() && i < 3; ++i) out(ctx, i, st ? st : MN_F32, stat);
}

void instance_norm(const Node& n, const mn_shape_ctx* ctx) {
  require_rank(n, 0, 3);
  require_rank(n, 1, 1, 1);
  require_rank(n, 2, 1, 1);
  same_as_input0(n, ctx);
}

void bool_unary(const Node& n, const mn_shape_ctx* ctx) {
  TensorRef x = n.input(0);
  if (x.rank() < 0) return unknown_outputs(n, ctx, MN_BOOL);
  out(ctx, 0, MN_BOOL, x.shape());
}

// ---- registration ------------------------------------------------------------------
using ShapeFn = void (*)(const Node&, const mn_shape_ctx*);

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

// Ops sharing one shape function and one first version (ONNX op versions: the frontend
// resolves a model's opset to each op's version). Every op is served up to
// kNewestValidatedOpset.
struct StdOpGroup {
  ShapeFn fn;
  int since;
  std::initializer_list<const char*> names;
};

const StdOpGroup kStdOps[] = {
    {gemm, 1, {"Gemm"}},
    {matmul, 1, {"MatMul"}},
    {conv, 1, {"Conv"}},
    {pool, 1, {"MaxPool", "AveragePool"}},
    {global_pool, 1, {"GlobalAveragePool", "GlobalMaxPool"}},
    {reshape, 1, {"Reshape"}},
    {flatten, 1, {"Flatten"}},
    {softmax, 1, {"Softmax", "LogSoftmax"}},
    {concat, 1, {"Concat"}},
    {transpose, 1, {"Transpose"}},
    {squeeze, 1, {"Squeeze"}},
    {unsqueeze, 1, {"Unsqueeze"}},
    {shape_op, 1, {"Shape"}},
    {constant_op, 1, {"Constant"}},
    {batchnorm, 1, {"BatchNormalization"}},
    {binary, 1, {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "PRelu", "Mean"}},
    {compare, 1, {"Equal", "Less", "Greater", "And", "Or", "Xor"}},
    {compare, 12, {"LessOrEqual", "GreaterOrEqual"}},
    {where, 9, {"Where"}},
    {unary, 1, {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Clip", "LeakyRelu",
                "Elu", "Softplus", "HardSigmoid", "Identity", "Dropout", "Not", "LRN", "Reciprocal",
                "Floor", "Ceil", "Selu", "Softsign"}},
    {unary, 7, {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan"}},
    {unary, 9, {"Sign", "Erf", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"}},
    {unary, 10, {"ThresholdedRelu"}},
    {unary, 11, {"Round"}},
    {unary, 12, {"Celu"}},
    {unary, 14, {"HardSwish"}},
    {bool_unary, 9, {"IsNaN"}},
    {bool_unary, 10, {"IsInf"}},
    // Issue 3: the rest of the ONNX op list.
    {conv_transpose, 1, {"ConvTranspose"}},
    {split, 2, {"Split"}},
    {slice, 1, {"Slice"}},
    {gather, 1, {"Gather"}},
    {expand, 8, {"Expand"}},
    {constant_of_shape, 9, {"ConstantOfShape"}},
    {pad, 2, {"Pad"}},
    {resize, 10, {"Resize"}},
    {resize, 7, {"Upsample"}},
    {reduce, 1, {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1",
                 "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}},
    {arg_reduce, 1, {"ArgMax", "ArgMin"}},
    {cast, 1, {"Cast"}},
    {tile, 6, {"Tile"}},
    {topk, 1, {"TopK"}},
    {depth_to_space, 1, {"DepthToSpace"}},
    {space_to_depth, 1, {"SpaceToDepth"}},
    {instance_norm, 1, {"InstanceNormalization"}},
    {range_op, 11, {"Range"}},
    {size_op, 1, {"Size"}},
    {layer_norm, 17, {"LayerNormalization"}},
};

}  // namespace

constexpr int kNewestValidatedOpset = 18;

// The inputs whose values the shape functions above read (mn_op_def.value_inputs): the
// session gives those graph inputs' values to planning.
constexpr uint64_t bit(int i) { return uint64_t(1) << i; }
const struct {
  const char* name;
  uint64_t inputs;
} kValueInputs[] = {
    {"Reshape", bit(1)}, {"Squeeze", bit(1)}, {"Unsqueeze", bit(1)}, {"Split", bit(1)},
    {"Slice", bit(1) | bit(2) | bit(3) | bit(4)}, {"Expand", bit(1)}, {"ConstantOfShape", bit(0)},
    {"Pad", bit(1) | bit(3)}, {"Resize", bit(1) | bit(2) | bit(3)}, {"Upsample", bit(1)}, {"Tile", bit(1)}, {"TopK", bit(1)},
    {"Range", bit(0) | bit(1) | bit(2)},
    {"ReduceMean", bit(1)}, {"ReduceMax", bit(1)}, {"ReduceMin", bit(1)}, {"ReduceSum", bit(1)},
    {"ReduceProd", bit(1)}, {"ReduceL1", bit(1)}, {"ReduceL2", bit(1)}, {"ReduceLogSum", bit(1)},
    {"ReduceLogSumExp", bit(1)}, {"ReduceSumSquare", bit(1)},
};

void register_standard_ops(Registry& registry) {
  for (const StdOpGroup& group : kStdOps)
    for (const char* name : group.names) {
      mn_op_def d{};
      d.struct_size = sizeof(mn_op_def);
      d.domain = "";
      d.name = name;
      d.since_version = group.since;
      // A node's op_version is the model's opset for the op's domain (as ONNX opset_import):
      // a definition introduced at `since` serves every later opset up to the newest one we
      // validated.
      d.max_version = kNewestValidatedOpset;
      d.user = reinterpret_cast<void*>(group.fn);
      for (const auto& v : kValueInputs)
        if (std::strcmp(v.name, name) == 0) d.value_inputs = v.inputs;
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
