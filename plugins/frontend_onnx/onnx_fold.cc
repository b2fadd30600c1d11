// Import-time constant folding: nodes whose inputs are all known (initializers, Constant
// nodes, Shape of a tensor with a fully known static shape, earlier folded results) are
// evaluated here and replaced by constants. This is what turns the shape subgraphs of
// PyTorch exports (Shape -> Gather -> Unsqueeze -> Concat -> Reshape / Expand / ...) into
// plain constants when the input shape is fixed. With a symbolic batch they stay nodes and
// the engine folds them at plan time, once the batch is known.
//
// Only small tensors are folded, and only ops whose semantics are simple data movement or
// integer arithmetic, evaluated exactly as the ONNX reference does.
#include "onnx_import.h"

#include "onnx_tensor.h"

#include <minnow/float_rounding.h>
#include <minnow/model.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

namespace minnow {
namespace onnx_frontend {

namespace {

struct FoldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool is_float(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16; }

int64_t get_i(const Tensor& t, int64_t i) {
  const void* p = t.raw();
  switch (t.dtype()) {
    case DataType::kInt64: return static_cast<const int64_t*>(p)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DataType::kInt8: return static_cast<const int8_t*>(p)[i];
    case DataType::kUInt8: case DataType::kBool: return static_cast<const uint8_t*>(p)[i];
    case DataType::kUInt16: return static_cast<const uint16_t*>(p)[i];
    case DataType::kUInt32: return static_cast<const uint32_t*>(p)[i];
    case DataType::kUInt64: return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
    case DataType::kFloat32: return static_cast<int64_t>(static_cast<const float*>(p)[i]);
    default: throw FoldError("unsupported element type");
  }
}

double get_f(const Tensor& t, int64_t i) {
  if (t.dtype() == DataType::kFloat32) return t.data<float>()[i];
  return static_cast<double>(get_i(t, i));
}

void set_i(Tensor& t, int64_t i, int64_t v) {
  void* p = t.raw();
  switch (t.dtype()) {
    case DataType::kInt64: static_cast<int64_t*>(p)[i] = v; break;
    case DataType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DataType::kInt16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DataType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DataType::kUInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DataType::kBool: static_cast<uint8_t*>(p)[i] = v != 0; break;
    case DataType::kUInt16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DataType::kUInt32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case DataType::kUInt64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case DataType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    default: throw FoldError("unsupported element type");
  }
}

void set_f(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DataType::kFloat32) {
    t.data<float>()[i] = static_cast<float>(v);
  } else if (t.dtype() == DataType::kBool) {
    t.data<uint8_t>()[i] = v != 0;
  } else {
    if (!std::isfinite(v)) throw FoldError("non-finite value cast to an integer");
    set_i(t, i, static_cast<int64_t>(v));  // truncation toward zero, like numpy astype
  }
}

std::vector<int64_t> ints_of(const Tensor& t) {
  if (is_float(t.dtype())) throw FoldError("expected an integer tensor");
  std::vector<int64_t> v(static_cast<size_t>(t.elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = get_i(t, static_cast<int64_t>(i));
  return v;
}

int64_t norm_axis(int64_t a, int64_t rank) {
  if (a < -rank || a >= rank) throw FoldError("axis out of range");
  return a < 0 ? a + rank : a;
}

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t r = 0;
  for (const auto& s : shapes) r = std::max(r, s.size());
  Shape o(r, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i], &x = o[r - s.size() + i];
      if (d == x || d == 1) continue;
      if (x == 1) x = d;
      else throw FoldError("shapes cannot be broadcast");
    }
  return o;
}

// For each element of `out`, the linear index into a tensor of shape `in` broadcast to it.
std::vector<int64_t> broadcast_index(const Shape& out, const Shape& in) {
  int64_t n = shape_elements(out);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  Shape ost = strides_of(out), ist = strides_of(in);
  size_t off = out.size() - in.size();
  for (int64_t e = 0; e < n; ++e) {
    int64_t rem = e, src = 0;
    for (size_t d = 0; d < out.size(); ++d) {
      int64_t c = rem / ost[d];
      rem %= ost[d];
      if (d >= off && in[d - off] != 1) src += c * ist[d - off];
    }
    idx[static_cast<size_t>(e)] = src;
  }
  return idx;
}

Tensor reshaped(const Tensor& t, Shape s) {
  if (shape_elements(s) != t.elements()) throw FoldError("reshape changes the element count");
  Tensor o(t.dtype(), std::move(s));
  if (t.bytes()) std::memcpy(o.raw(), t.raw(), t.bytes());
  return o;
}

struct Ctx {
  const ir::Node& node;
  std::vector<const Tensor*> in;     // null: omitted
  std::vector<const Shape*> shape;   // static shapes of inputs (for Shape / Size)
  int64_t max_elements;

  const ir::Attribute* attr(const char* n) const { return node.attr(n); }
  int64_t attr_i(const char* n, int64_t def) const {
    const ir::Attribute* a = attr(n);
    return a && a->type == ir::AttrType::kInt ? a->i : def;
  }
  bool has_ints(const char* n) const {
    const ir::Attribute* a = attr(n);
    return a && a->type == ir::AttrType::kInts;
  }
  std::vector<int64_t> attr_ints(const char* n) const {
    const ir::Attribute* a = attr(n);
    return a && a->type == ir::AttrType::kInts ? a->ints : std::vector<int64_t>{};
  }
  const Tensor& input(size_t i) const {
    if (i >= in.size() || !in[i]) throw FoldError("missing input");
    return *in[i];
  }
  bool has(size_t i) const { return i < in.size() && in[i]; }
  void check_size(const Shape& s) const {
    int64_t n = shape_elements(s);
    if (n < 0 || n > max_elements) throw FoldError("result too large to fold");
  }
};

Tensor eval_binary(const Ctx& c) {
  const Tensor &a = c.input(0), &b = c.input(1);
  const std::string& op = c.node.op;
  Shape os = broadcast_shape({a.shape(), b.shape()});
  c.check_size(os);
  bool cmp = op == "Equal" || op == "Less" || op == "Greater";
  if (a.dtype() != b.dtype()) throw FoldError("mixed element types");
  Tensor o(cmp ? DataType::kBool : a.dtype(), os);
  auto ia = broadcast_index(os, a.shape()), ib = broadcast_index(os, b.shape());
  const bool fl = a.dtype() == DataType::kFloat32;
  for (int64_t e = 0; e < o.elements(); ++e) {
    size_t k = static_cast<size_t>(e);
    if (fl) {
      float x = a.data<float>()[ia[k]], y = b.data<float>()[ib[k]];
      if (op == "Add") o.data<float>()[e] = x + y;
      else if (op == "Sub") o.data<float>()[e] = x - y;
      else if (op == "Mul") o.data<float>()[e] = x * y;
      else if (op == "Div") o.data<float>()[e] = x / y;
      else if (op == "Equal") o.data<uint8_t>()[e] = x == y;
      else if (op == "Less") o.data<uint8_t>()[e] = x < y;
      else if (op == "Greater") o.data<uint8_t>()[e] = x > y;
    } else {
      int64_t x = get_i(a, ia[k]), y = get_i(b, ib[k]);
      if (op == "Add") set_i(o, e, x + y);
      else if (op == "Sub") set_i(o, e, x - y);
      else if (op == "Mul") set_i(o, e, x * y);
      else if (op == "Div") {
        if (y == 0) throw FoldError("integer division by zero");
        set_i(o, e, x / y);
      } else if (op == "Equal") set_i(o, e, x == y);
      else if (op == "Less") set_i(o, e, x < y);
      else if (op == "Greater") set_i(o, e, x > y);
    }
  }
  return o;
}

Tensor eval_slice(const Ctx& c) {
  const Tensor& x = c.input(0);
  const int64_t r = static_cast<int64_t>(x.shape().size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.node.op_version < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    starts = ints_of(c.input(1));
    ends = ints_of(c.input(2));
    if (c.has(3)) axes = ints_of(c.input(3));
    if (c.has(4)) steps = ints_of(c.input(4));
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw FoldError("starts / ends / axes / steps lengths differ");
  Shape st(r, 0), step(r, 1), os = x.shape();
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = norm_axis(axes[i], r), d = x.shape()[a], s = steps[i];
    if (s == 0) throw FoldError("step 0");
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += d;
    if (e < 0) e += d;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      os[a] = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      os[a] = b > e ? (b - e + (-s) - 1) / (-s) : 0;
    }
    st[a] = b;
    step[a] = s;
  }
  c.check_size(os);
  Tensor o(x.dtype(), os);
  size_t es = dtype_size(x.dtype());
  Shape ist = strides_of(x.shape()), ost = strides_of(os);
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dst = static_cast<uint8_t*>(o.raw());
  for (int64_t e = 0; e < o.elements(); ++e) {
    int64_t rem = e, off = 0;
    for (int64_t d = 0; d < r; ++d) {
      int64_t cidx = rem / ost[d];
      rem %= ost[d];
      off += (st[d] + cidx * step[d]) * ist[d];
    }
    std::memcpy(dst + e * es, src + off * es, es);
  }
  return o;
}

Tensor eval_gather(const Ctx& c) {
  const Tensor &x = c.input(0), &ind = c.input(1);
  const int64_t r = static_cast<int64_t>(x.shape().size());
  if (r == 0) throw FoldError("gather on a scalar");
  int64_t axis = norm_axis(c.attr_i("axis", 0), r);
  std::vector<int64_t> idx = ints_of(ind);
  Shape os(x.shape().begin(), x.shape().begin() + axis);
  os.insert(os.end(), ind.shape().begin(), ind.shape().end());
  os.insert(os.end(), x.shape().begin() + axis + 1, x.shape().end());
  c.check_size(os);
  int64_t outer = 1, inner = 1, d = x.shape()[axis];
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int64_t i = axis + 1; i < r; ++i) inner *= x.shape()[i];
  Tensor o(x.dtype(), os);
  size_t es = dtype_size(x.dtype());
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dst = static_cast<uint8_t*>(o.raw());
  for (int64_t a = 0; a < outer; ++a)
    for (size_t k = 0; k < idx.size(); ++k) {
      int64_t j = idx[k] < 0 ? idx[k] + d : idx[k];
      if (j < 0 || j >= d) throw FoldError("index out of range");
      std::memcpy(dst + ((a * static_cast<int64_t>(idx.size()) + static_cast<int64_t>(k)) * inner) * es,
                  src + ((a * d + j) * inner) * es, static_cast<size_t>(inner) * es);
    }
  return o;
}

Tensor eval_concat(const Ctx& c) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < c.in.size(); ++i)
    if (c.in[i]) ins.push_back(c.in[i]);
  if (ins.empty()) throw FoldError("no inputs");
  const int64_t r = static_cast<int64_t>(ins[0]->shape().size());
  int64_t axis = norm_axis(c.attr_i("axis", 0), r);
  Shape os = ins[0]->shape();
  os[axis] = 0;
  for (const Tensor* t : ins) {
    if (t->dtype() != ins[0]->dtype() || static_cast<int64_t>(t->shape().size()) != r) throw FoldError("inputs differ");
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && t->shape()[d] != os[d]) throw FoldError("inputs differ in shape");
    os[axis] += t->shape()[axis];
  }
  c.check_size(os);
  Tensor o(ins[0]->dtype(), os);
  size_t es = dtype_size(o.dtype());
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= os[i];
  uint8_t* dst = static_cast<uint8_t*>(o.raw());
  for (int64_t a = 0; a < outer; ++a)
    for (const Tensor* t : ins) {
      size_t chunk = static_cast<size_t>(outer ? t->elements() / outer : 0) * es;
      std::memcpy(dst, static_cast<const uint8_t*>(t->raw()) + a * chunk, chunk);
      dst += chunk;
    }
  return o;
}

Tensor eval_reshape(const Ctx& c) {
  const Tensor& x = c.input(0);
  std::vector<int64_t> target = c.node.op_version < 5 ? c.attr_ints("shape") : ints_of(c.input(1));
  bool allowzero = c.attr_i("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowzero) {
      if (i >= x.shape().size()) throw FoldError("0 beyond the input rank");
      target[i] = x.shape()[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) throw FoldError("two -1 dims");
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      throw FoldError("negative dim");
    } else {
      known *= target[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.elements() % known) throw FoldError("cannot infer -1");
    target[infer] = x.elements() / known;
  }
  return reshaped(x, target);
}

Tensor eval_cast(const Ctx& c) {
  const Tensor& x = c.input(0);
  DataType to;
  if (!engine_dtype(static_cast<int>(c.attr_i("to", 0)), &to)) throw FoldError("unsupported cast target");
  Tensor o(to, x.shape());
  const bool float_path = is_float(x.dtype()) || is_float(to);
  // A Cast to float16 / bfloat16 became float32 with round_to set (onnx_import.cc).
  const ir::Attribute* rt = c.attr("round_to");
  const std::string round_to = rt && rt->type == ir::AttrType::kString ? rt->s : "";
  for (int64_t e = 0; e < x.elements(); ++e) {
    if (!float_path) {
      set_i(o, e, get_i(x, e));
      continue;
    }
    double v = get_f(x, e);
    if (round_to == "float16") v = round_to_float16(static_cast<float>(v));
    else if (round_to == "bfloat16") v = round_to_bfloat16(static_cast<float>(v));
    set_f(o, e, v);
  }
  return o;
}

Tensor eval(const Ctx& c) {
  const std::string& op = c.node.op;
  if (op == "Shape") {
    const Shape& s = *c.shape[0];
    int64_t r = static_cast<int64_t>(s.size());
    int64_t b = c.attr_i("start", 0), e = c.attr_i("end", r);
    if (b < 0) b += r;
    if (e < 0) e += r;
    b = std::clamp<int64_t>(b, 0, r);
    e = std::clamp<int64_t>(e, 0, r);
    std::vector<int64_t> v(s.begin() + b, s.begin() + std::max(b, e));
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  if (op == "Size") return Tensor::from_vector<int64_t>({}, {shape_elements(*c.shape[0])});
  if (op == "Identity") return reshaped(c.input(0), c.input(0).shape());
  if (op == "Cast") return eval_cast(c);
  if (op == "Reshape") return eval_reshape(c);
  if (op == "Flatten") {
    const Shape& s = c.input(0).shape();
    int64_t axis = c.attr_i("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(s.size());
    if (axis < 0 || axis > static_cast<int64_t>(s.size())) throw FoldError("axis out of range");
    int64_t a = 1, b = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) (i < axis ? a : b) *= s[i];
    return reshaped(c.input(0), {a, b});
  }
  if (op == "Unsqueeze") {
    const Tensor& x = c.input(0);
    std::vector<int64_t> axes = c.node.op_version < 13 ? c.attr_ints("axes") : ints_of(c.input(1));
    int64_t r = static_cast<int64_t>(x.shape().size() + axes.size());
    std::vector<bool> ins(static_cast<size_t>(r), false);
    for (int64_t a : axes) {
      int64_t k = norm_axis(a, r);
      if (ins[k]) throw FoldError("repeated axis");
      ins[k] = true;
    }
    Shape s;
    size_t src = 0;
    for (int64_t i = 0; i < r; ++i) s.push_back(ins[i] ? 1 : x.shape()[src++]);
    return reshaped(x, s);
  }
  if (op == "Squeeze") {
    const Tensor& x = c.input(0);
    const int64_t r = static_cast<int64_t>(x.shape().size());
    std::vector<int64_t> axes = c.node.op_version < 13 ? c.attr_ints("axes") : (c.has(1) ? ints_of(c.input(1)) : std::vector<int64_t>{});
    std::vector<bool> drop(static_cast<size_t>(r), false);
    if (axes.empty()) {
      for (int64_t i = 0; i < r; ++i) drop[i] = x.shape()[i] == 1;
    } else {
      for (int64_t a : axes) {
        int64_t k = norm_axis(a, r);
        if (x.shape()[k] != 1) throw FoldError("squeezing a dim that is not 1");
        drop[k] = true;
      }
    }
    Shape s;
    for (int64_t i = 0; i < r; ++i)
      if (!drop[i]) s.push_back(x.shape()[i]);
    return reshaped(x, s);
  }
  if (op == "Concat") return eval_concat(c);
  if (op == "Gather") return eval_gather(c);
  if (op == "Slice") return eval_slice(c);
  if (op == "ConstantOfShape") {
    Shape s = ints_of(c.input(0));
    for (int64_t d : s)
      if (d < 0) throw FoldError("negative dim");
    c.check_size(s);
    const ir::Attribute* a = c.attr("value");
    (void)a;  // the value tensor is passed as extra input slot by the caller
    const Tensor* v = c.in.size() > 1 ? c.in[1] : nullptr;
    Tensor o(v ? v->dtype() : DataType::kFloat32, s);
    if (v) {
      if (v->elements() != 1) throw FoldError("value must have one element");
      size_t es = dtype_size(v->dtype());
      for (int64_t e = 0; e < o.elements(); ++e) std::memcpy(static_cast<uint8_t*>(o.raw()) + e * es, v->raw(), es);
    }
    return o;
  }
  if (op == "Expand") {
    const Tensor& x = c.input(0);
    Shape os = broadcast_shape({x.shape(), ints_of(c.input(1))});
    c.check_size(os);
    Tensor o(x.dtype(), os);
    auto idx = broadcast_index(os, x.shape());
    size_t es = dtype_size(x.dtype());
    for (int64_t e = 0; e < o.elements(); ++e)
      std::memcpy(static_cast<uint8_t*>(o.raw()) + e * es, static_cast<const uint8_t*>(x.raw()) + idx[e] * es, es);
    return o;
  }
  if (op == "Range") {
    const Tensor &s = c.input(0), &l = c.input(1), &d = c.input(2);
    if (s.elements() != 1 || l.elements() != 1 || d.elements() != 1) throw FoldError("Range takes scalars");
    if (is_float(s.dtype())) {
      double start = get_f(s, 0), limit = get_f(l, 0), delta = get_f(d, 0);
      if (delta == 0) throw FoldError("delta 0");
      int64_t n = std::max<int64_t>(static_cast<int64_t>(std::ceil((limit - start) / delta)), 0);
      c.check_size({n});
      Tensor o(s.dtype(), {n});
      for (int64_t i = 0; i < n; ++i) set_f(o, i, static_cast<float>(start) + static_cast<float>(i) * static_cast<float>(delta));
      return o;
    }
    int64_t start = get_i(s, 0), limit = get_i(l, 0), delta = get_i(d, 0);
    if (delta == 0) throw FoldError("delta 0");
    int64_t n = std::max<int64_t>((limit - start + delta + (delta > 0 ? -1 : 1)) / delta, 0);
    c.check_size({n});
    Tensor o(s.dtype(), {n});
    for (int64_t i = 0; i < n; ++i) set_i(o, i, start + i * delta);
    return o;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Equal" || op == "Less" || op == "Greater")
    return eval_binary(c);
  if (op == "Not") {
    const Tensor& x = c.input(0);
    Tensor o(DataType::kBool, x.shape());
    for (int64_t e = 0; e < x.elements(); ++e) o.data<uint8_t>()[e] = !get_i(x, e);
    return o;
  }
  if (op == "Where") {
    const Tensor &cond = c.input(0), &x = c.input(1), &y = c.input(2);
    if (x.dtype() != y.dtype()) throw FoldError("mixed element types");
    Shape os = broadcast_shape({cond.shape(), x.shape(), y.shape()});
    c.check_size(os);
    Tensor o(x.dtype(), os);
    auto ic = broadcast_index(os, cond.shape()), ix = broadcast_index(os, x.shape()), iy = broadcast_index(os, y.shape());
    size_t es = dtype_size(x.dtype());
    for (int64_t e = 0; e < o.elements(); ++e) {
      bool take_x = get_i(cond, ic[e]) != 0;
      const uint8_t* src = take_x ? static_cast<const uint8_t*>(x.raw()) + ix[e] * es : static_cast<const uint8_t*>(y.raw()) + iy[e] * es;
      std::memcpy(static_cast<uint8_t*>(o.raw()) + e * es, src, es);
    }
    return o;
  }
  throw FoldError("not foldable");
}

bool foldable_op(const std::string& op) {
  static const char* const kOps[] = {"Shape", "Size", "Identity", "Cast", "Reshape", "Flatten", "Unsqueeze",
                                     "Squeeze", "Concat", "Gather", "Slice", "ConstantOfShape", "Expand",
                                     "Range", "Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater", "Not", "Where"};
  for (const char* o : kOps)
    if (op == o) return true;
  return false;
}

}  // namespace

Result<int> fold_constants(ir::ModelIR& m, const ImportOptions& options,
                           const std::map<std::string, Shape>& static_shapes) {
  ir::Graph& g = m.graph;
  const size_t nt = g.tensors.size();
  std::vector<std::optional<Tensor>> value(nt);
  std::vector<std::optional<Shape>> shape(nt);
  for (size_t t = 0; t < nt; ++t) {
    const auto& info = g.tensors[t];
    if (info.is_constant()) {
      auto v = decode_constant(m, info);
      if (!v) return v.status();
      shape[t] = v.value().shape();
      value[t] = std::move(v.value());
    } else if (info.has_shape && shape_elements(info.static_shape()) >= 0) {
      shape[t] = info.static_shape();
    } else {
      auto it = static_shapes.find(info.name);
      if (it != static_shapes.end()) shape[t] = it->second;
    }
  }
  int folded = 0;
  std::vector<ir::Node> kept;
  for (ir::Node& node : g.nodes) {
    bool try_fold = node.domain.empty() && foldable_op(node.op) && node.outputs.size() == 1;
    if (try_fold) {
      const bool shape_only = node.op == "Shape" || node.op == "Size";
      Ctx c{node, {}, {}, options.max_fold_elements};
      for (int32_t in : node.inputs) {
        c.in.push_back(in >= 0 && value[in] ? &*value[in] : nullptr);
        c.shape.push_back(in >= 0 && shape[in] ? &*shape[in] : nullptr);
        if (in < 0) continue;
        if (shape_only ? !shape[in] : !value[in]) try_fold = false;
      }
      if (node.inputs.empty() || (!shape_only && node.inputs[0] < 0)) try_fold = false;
      if (try_fold && node.op == "ConstantOfShape") {
        const ir::Attribute* a = node.attr("value");
        c.in.resize(1);
        if (a && a->type == ir::AttrType::kTensor) c.in.push_back(value[a->tensor] ? &*value[a->tensor] : nullptr);
      }
      if (try_fold) {
        try {
          Tensor r = eval(c);
          int32_t o = node.outputs[0];
          auto& info = g.tensors[o];
          info.dtype = r.dtype();
          info.shape.clear();
          for (int64_t d : r.shape()) info.shape.push_back(ir::Dim{d, ""});
          info.has_shape = true;
          m.buffers.push_back(ir::Blob::copy_of(r.raw(), r.bytes()));
          info.encodings = {ir::DenseStage{static_cast<uint32_t>(m.buffers.size() - 1), r.dtype()}};
          shape[o] = r.shape();
          value[o] = std::move(r);
          ++folded;
          continue;
        } catch (const FoldError&) {
          // Left for the engine, which reports a real problem with a proper message.
        }
      }
    }
    kept.push_back(std::move(node));
  }
  g.nodes = std::move(kept);
  return folded;
}

void remove_unused_constants(ir::ModelIR& m) {
  ir::Graph& g = m.graph;
  const size_t nt = g.tensors.size();
  std::vector<bool> used(nt, false);
  for (const auto& n : g.nodes) {
    for (int32_t i : n.inputs)
      if (i >= 0) used[i] = true;
    for (int32_t o : n.outputs) used[o] = true;
    for (const auto& a : n.attributes)
      if (a.type == ir::AttrType::kTensor && a.tensor >= 0) used[a.tensor] = true;
  }
  for (int32_t i : g.inputs) used[i] = true;
  for (int32_t o : g.outputs) used[o] = true;
  std::vector<int32_t> remap(nt, -1);
  std::vector<ir::TensorInfo> tensors;
  for (size_t t = 0; t < nt; ++t)
    if (used[t]) {
      remap[t] = static_cast<int32_t>(tensors.size());
      tensors.push_back(std::move(g.tensors[t]));
    }
  if (tensors.size() == nt) {
    g.tensors = std::move(tensors);
    return;
  }
  g.tensors = std::move(tensors);
  for (auto& n : g.nodes) {
    for (int32_t& i : n.inputs)
      if (i >= 0) i = remap[i];
    for (int32_t& o : n.outputs) o = remap[o];
    for (auto& a : n.attributes)
      if (a.type == ir::AttrType::kTensor && a.tensor >= 0) a.tensor = remap[a.tensor];
  }
  for (int32_t& i : g.inputs) i = remap[i];
  for (int32_t& o : g.outputs) o = remap[o];
  // Buffers: keep those still referenced (dense stages only at import).
  std::vector<int64_t> bremap(m.buffers.size(), -1);
  std::vector<ir::Blob> buffers;
  auto keep = [&](uint32_t& b) {
    if (bremap[b] < 0) {
      bremap[b] = static_cast<int64_t>(buffers.size());
      buffers.push_back(m.buffers[b]);
    }
    b = static_cast<uint32_t>(bremap[b]);
  };
  for (auto& t : g.tensors)
    for (auto& st : t.encodings) {
      if (auto* d = std::get_if<ir::DenseStage>(&st)) keep(d->buffer);
      else if (auto* s = std::get_if<ir::SparseStage>(&st)) { keep(s->row_ptr); keep(s->col_idx); }
      else if (auto* c = std::get_if<ir::CodebookStage>(&st)) keep(c->indices);
      else if (auto* h = std::get_if<ir::HuffmanStage>(&st)) keep(h->bitstream);
    }
  m.buffers = std::move(buffers);
}

}  // namespace onnx_frontend
}  // namespace minnow
