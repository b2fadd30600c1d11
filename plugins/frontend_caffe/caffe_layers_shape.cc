// Concat, Slice, Split, Flatten, Reshape, Permute: layout layers, mapped with shapes
// computed here so Caffe's 0 / -1 / axis conventions become plain standard attributes.
#include "caffe_layers.h"

#include <algorithm>

namespace minnow {
namespace caffe {

namespace {

const TextMsg& param_or_empty(const LayerDef& l, const char* field) {
  static const TextMsg kEmpty;
  const TextMsg* p = l.param(field);
  return p ? *p : kEmpty;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

void reshape_to(Ctx& c, const LayerDef& l, const std::string& x, const Shape& ys) {
  c.node(l, "Reshape", {x, c.constant_i64(l, "shape", ys)}, {c.out(l, 0, ys)});
}

}  // namespace

void convert_concat(Ctx& c, const LayerDef& l) {
  c.require(l, 1, SIZE_MAX, 1, 1);
  const TextMsg& p = param_or_empty(l, "concat_param");
  std::vector<std::string> xs;
  for (size_t i = 0; i < l.bottoms.size(); ++i) xs.push_back(c.in(l, i));
  Shape s = c.shape(xs[0]);
  // concat_dim is the pre-axis spelling (non-negative only).
  int axis = c.axis(l, p.has("axis") ? p.get_int("axis", 1) : p.get_int("concat_dim", 1), s.size());
  Shape ys = s;
  for (size_t i = 1; i < xs.size(); ++i) {
    const Shape& t = c.shape(xs[i]);
    bool ok = t.size() == s.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = d == static_cast<size_t>(axis) || t[d] == s[d];
    if (!ok)
      c.fail(l, "bottom '" + l.bottoms[i] + "' " + shape_to_string(t) + " does not match " + shape_to_string(s) +
                    " outside axis " + std::to_string(axis));
    ys[axis] += t[axis];
  }
  if (xs.size() == 1) {
    c.alias(l, 0, xs[0]);
    return;
  }
  c.node(l, "Concat", xs, {c.out(l, 0, ys)}, {Attr::Int("axis", axis)});
}

void convert_slice(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, SIZE_MAX);
  const TextMsg& p = param_or_empty(l, "slice_param");
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  int axis = c.axis(l, p.has("axis") ? p.get_int("axis", 1) : p.get_int("slice_dim", 1), s.size());
  auto points = p.get_ints("slice_point");
  size_t n = l.tops.size();
  std::vector<int64_t> sizes;
  if (points.empty()) {
    if (s[axis] % static_cast<int64_t>(n))
      c.fail(l, "axis " + std::to_string(axis) + " of size " + std::to_string(s[axis]) + " does not split evenly into " +
                    std::to_string(n) + " tops");
    sizes.assign(n, s[axis] / static_cast<int64_t>(n));
  } else {
    if (points.size() != n - 1)
      c.fail(l, std::to_string(points.size()) + " slice_point values for " + std::to_string(n) + " tops (need " +
                    std::to_string(n - 1) + ")");
    int64_t prev = 0;
    for (int64_t pt : points) {
      if (pt <= prev || pt >= s[axis])
        c.fail(l, "slice_point values must increase strictly inside (0, " + std::to_string(s[axis]) + ")");
      sizes.push_back(pt - prev);
      prev = pt;
    }
    sizes.push_back(s[axis] - prev);
  }
  if (n == 1) {
    c.alias(l, 0, x);
    return;
  }
  std::vector<std::string> outs;
  for (size_t i = 0; i < n; ++i) {
    Shape ys = s;
    ys[axis] = sizes[i];
    outs.push_back(c.out(l, i, ys));
  }
  c.node(l, "Split", {x, c.constant_i64(l, "split", sizes)}, outs, {Attr::Int("axis", axis)});
}

// Split copies its bottom to every top: here every top is simply the bottom tensor.
void convert_split(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, SIZE_MAX);
  std::string x = c.in(l, 0);
  for (size_t i = 0; i < l.tops.size(); ++i) c.alias(l, i, x);
}

void convert_flatten(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  const TextMsg& p = param_or_empty(l, "flatten_param");
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  int a = c.axis(l, p.get_int("axis", 1), s.size()), e = c.axis(l, p.get_int("end_axis", -1), s.size(), "end_axis");
  if (e < a) c.fail(l, "end_axis is before axis");
  Shape ys(s.begin(), s.begin() + a);
  ys.push_back(product(s, a, e + 1));
  ys.insert(ys.end(), s.begin() + e + 1, s.end());
  // The standard Flatten gives [prod(dims before axis), prod(rest)]: the same as Caffe's
  // only for axis 1 to the end; other cases are a Reshape.
  if (a == 1 && e + 1 == static_cast<int>(s.size())) c.node(l, "Flatten", {x}, {c.out(l, 0, ys)}, {Attr::Int("axis", 1)});
  else reshape_to(c, l, x, ys);
}

void convert_reshape(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  const TextMsg& p = param_or_empty(l, "reshape_param");
  const TextMsg* sm = p.get_msg("shape");
  std::vector<int64_t> dims = sm ? sm->get_ints("dim") : std::vector<int64_t>{};
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = p.get_int("axis", 0), num_axes = p.get_int("num_axes", -1);
  // Caffe: axis counts from the end as -1 = after the last axis; num_axes -1 = to the end.
  int64_t start = axis >= 0 ? axis : r + axis + 1;
  if (start < 0 || start > r) c.fail(l, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  int64_t end = num_axes == -1 ? r : start + num_axes;
  if (num_axes < -1 || end > r) c.fail(l, "num_axes " + std::to_string(num_axes) + " out of range");
  Shape ys(s.begin(), s.begin() + start);
  int infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d == 0) {
      if (start + static_cast<int64_t>(i) >= r) c.fail(l, "dim 0 (copy) at a position the input does not have");
      d = s[start + i];
    } else if (d == -1) {
      if (infer >= 0) c.fail(l, "more than one -1 in the shape");
      infer = static_cast<int>(ys.size());
    } else if (d < -1) {
      c.fail(l, "bad dim " + std::to_string(d));
    }
    ys.push_back(d);
  }
  ys.insert(ys.end(), s.begin() + end, s.end());
  int64_t total = product(s, 0, s.size()), known = 1;
  for (size_t i = 0; i < ys.size(); ++i)
    if (static_cast<int>(i) != infer) known *= ys[i];
  if (infer >= 0) {
    if (known == 0 || total % known) c.fail(l, "cannot infer the -1 dim: " + std::to_string(total) + " values");
    ys[infer] = total / known;
  } else if (known != total) {
    c.fail(l, "shape " + shape_to_string(ys) + " does not hold the " + std::to_string(total) + " values of " +
                  shape_to_string(s));
  }
  reshape_to(c, l, x, ys);
}

void convert_permute(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  const TextMsg& p = param_or_empty(l, "permute_param");
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  std::vector<int64_t> perm;
  for (int64_t o : p.get_ints("order")) {
    int a = c.axis(l, o, s.size(), "order");
    if (std::find(perm.begin(), perm.end(), a) != perm.end()) c.fail(l, "order lists axis " + std::to_string(a) + " twice");
    perm.push_back(a);
  }
  // SSD's Permute: axes not listed follow in their original order.
  for (int64_t a = 0; a < static_cast<int64_t>(s.size()); ++a)
    if (std::find(perm.begin(), perm.end(), a) == perm.end()) perm.push_back(a);
  bool identity = true;
  Shape ys;
  for (size_t i = 0; i < perm.size(); ++i) {
    identity = identity && perm[i] == static_cast<int64_t>(i);
    ys.push_back(s[perm[i]]);
  }
  if (identity) {
    c.alias(l, 0, x);
    return;
  }
  c.node(l, "Transpose", {x}, {c.out(l, 0, ys)}, {Attr::Ints("perm", perm)});
}

}  // namespace caffe
}  // namespace minnow
