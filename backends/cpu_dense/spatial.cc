#include "spatial.h"

namespace minnow {
namespace cpu_dense {

namespace {

void read_list(const Node& node, const char* name, size_t expected, int64_t min_value,
               int64_t* dst) {
  if (!node.has_attr(name)) return;
  std::vector<int64_t> v = node.attr_ints(name);
  if (v.size() != expected)
    node.fail(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " +
              std::to_string(expected));
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < min_value)
      node.fail(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
                " must be >= " + std::to_string(min_value));
    dst[i] = v[i];
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

}  // namespace

SpatialAttrs parse_spatial(const Node& node, int nsp, const int64_t* weight_kernel,
                           bool allow_ceil_mode) {
  if (nsp < 1 || nsp > kMaxSpatial)
    node.fail("cpu_dense supports 1 to 3 spatial dims, got " + std::to_string(nsp),
              MN_ERR_UNSUPPORTED);
  SpatialAttrs a;
  a.nsp = nsp;
  if (node.has_attr("kernel_shape")) {
    read_list(node, "kernel_shape", nsp, 1, a.kernel);
    if (weight_kernel)
      for (int i = 0; i < nsp; ++i)
        if (weight_kernel[i] >= 0 && weight_kernel[i] != a.kernel[i])
          node.fail("kernel_shape[" + std::to_string(i) + "] = " + std::to_string(a.kernel[i]) +
                    " differs from the weight's " + std::to_string(weight_kernel[i]));
  } else if (weight_kernel) {
    for (int i = 0; i < nsp; ++i) a.kernel[i] = weight_kernel[i];  // may be -1 until run
  } else {
    node.fail("attribute kernel_shape is required");
  }
  read_list(node, "strides", nsp, 1, a.stride);
  read_list(node, "dilations", nsp, 1, a.dilation);
  if (node.has_attr("pads")) {
    int64_t pads[2 * kMaxSpatial];
    read_list(node, "pads", 2 * nsp, 0, pads);
    for (int i = 0; i < nsp; ++i) {
      a.pad_begin[i] = pads[i];
      a.pad_end[i] = pads[nsp + i];
    }
  }
  std::string ap = node.attr_string("auto_pad", "NOTSET");
  if (ap == "NOTSET" || ap.empty())
    a.auto_pad = AutoPad::kNotSet;
  else if (ap == "SAME_UPPER")
    a.auto_pad = AutoPad::kSameUpper;
  else if (ap == "SAME_LOWER")
    a.auto_pad = AutoPad::kSameLower;
  else if (ap == "VALID")
    a.auto_pad = AutoPad::kValid;
  else
    node.fail("auto_pad '" + ap + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  int64_t ceil_mode = node.attr_int("ceil_mode", 0);
  if (ceil_mode != 0 && !allow_ceil_mode) node.fail("ceil_mode is not an attribute of this op");
  a.ceil_mode = ceil_mode != 0;
  return a;
}

bool resolve_axis(const SpatialAttrs& a, int i, int64_t in, Axis* ax, int64_t* out_alt) {
  ax->in = in;
  ax->k = a.kernel[i];
  ax->s = a.stride[i];
  ax->d = a.dilation[i];
  const int64_t eff = (ax->k - 1) * ax->d + 1;  // extent of the dilated window
  if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
    // Output ceil(in / s); the padding needed for that is split evenly, the odd element
    // going to the end (SAME_UPPER) or the beginning (SAME_LOWER).
    ax->out = ceil_div(in, ax->s);
    int64_t total = std::max<int64_t>(0, (ax->out - 1) * ax->s + eff - in);
    int64_t small = total / 2, big = total - small;
    ax->pb = a.auto_pad == AutoPad::kSameUpper ? small : big;
    ax->pe = a.auto_pad == AutoPad::kSameUpper ? big : small;
    *out_alt = ax->out;
    return ax->out >= 1;
  }
  if (a.auto_pad == AutoPad::kValid) {
    ax->pb = ax->pe = 0;
  } else {
    ax->pb = a.pad_begin[i];
    ax->pe = a.pad_end[i];
  }
  const int64_t span = in + ax->pb + ax->pe - eff;  // room for the window to move
  if (span < 0) return false;
  if (!a.ceil_mode) {
    ax->out = span / ax->s + 1;
    *out_alt = ax->out;
    return true;
  }
  ax->out = ceil_div(span, ax->s) + 1;
  *out_alt = ax->out;
  if ((ax->out - 1) * ax->s >= in + ax->pb) *out_alt = ax->out - 1;
  return true;
}

std::string resolve_geometry(const SpatialAttrs& a, const int64_t* in_dims, const int64_t* out_dims,
                             Axis axes[kMaxSpatial]) {
  const int lead = kMaxSpatial - a.nsp;
  for (int i = 0; i < lead; ++i) axes[i] = Axis();
  for (int i = 0; i < a.nsp; ++i) {
    Axis& ax = axes[lead + i];
    int64_t alt = 0;
    if (a.kernel[i] < 1) return "kernel size unknown";
    if (!resolve_axis(a, i, in_dims[i], &ax, &alt))
      return "window " + std::to_string((a.kernel[i] - 1) * a.dilation[i] + 1) +
             " does not fit spatial dim " + std::to_string(i) + " of size " +
             std::to_string(in_dims[i]) + " with its padding";
    if (out_dims[i] != ax.out && out_dims[i] != alt)
      return "output spatial dim " + std::to_string(i) + " is " + std::to_string(out_dims[i]) +
             ", the attributes give " + std::to_string(ax.out) +
             (alt != ax.out ? " or " + std::to_string(alt) : std::string());
    ax.out = out_dims[i];
  }
  return std::string();
}

}  // namespace cpu_dense
}  // namespace minnow
