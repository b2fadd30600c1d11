// Resize (opset 10, 11, 13+) and Upsample (opset 7 scales attribute, opset 9 scales input),
// float32, any rank: modes nearest (round_prefer_floor / round_prefer_ceil / floor / ceil),
// linear and cubic (cubic_coeff_a, exclude_outside), every coordinate_transformation_mode
// (half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn,
// tf_crop_and_resize with roi and extrapolation_value), scales or sizes.
//
// The ONNX definition is separable: each axis maps an output index to a few input indices
// with weights (1 tap nearest, 2 linear, 4 cubic; exact zeros dropped, so an axis whose
// scale is 1 costs one tap). The kernel builds those per-axis tap tables in scratch, then
// each output element is the weighted sum over the product of its axes' taps. Neighbours
// outside the input take the edge value (index clamped), as the ONNX reference pads by
// edge; with exclude_outside they get weight 0 and the rest is renormalised. Coordinates
// are computed in double like the reference (numpy float64), so the round-half cases of
// nearest land on the same side.
//
// Upsample and Resize-10 predate coordinate_transformation_mode: asymmetric, and nearest
// takes floor (ceil when shrinking), as onnxruntime does.
#include <cmath>

#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelNN, kTfCrop };
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };

struct ResizeAttrs {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
  // Where the run-time inputs are: -1 when the op version has no such input.
  int roi_in = -1, scales_in = -1, sizes_in = -1;
  std::vector<float> scales_attr;  // Upsample-7 (fixed at prepare time)
};

constexpr int kMaxTaps = 4;

// One tap of an axis table: input index and weight.
struct Tap {
  int64_t idx;
  float w;
};

// Per output index of one axis: where its taps start, how many (0 = outside the input
// under tf_crop_and_resize: the element takes extrapolation_value).
struct AxisEntry {
  int32_t first;
  int32_t count;
};

int taps_of(Mode m) { return m == Mode::kNearest ? 1 : m == Mode::kLinear ? 2 : kMaxTaps; }

// The input coordinate of output index `x` on an axis (ONNX's formulas). `out_len` is the
// resized length as the reference defines it: in * scale, not rounded (it equals `sizes`
// when sizes are given); align_corners therefore differs from onnxruntime, which divides by
// the integer output size, when scales do not give a whole number. ONNX's node tests
// follow the reference.
double source_coord(Coord c, int64_t x, double scale, int64_t in, double out_len, double roi_start,
                    double roi_end) {
  const double xr = static_cast<double>(x);
  switch (c) {
    case Coord::kHalfPixel: return (xr + 0.5) / scale - 0.5;
    case Coord::kPytorchHalfPixel: return out_len > 1.0 ? (xr + 0.5) / scale - 0.5 : 0.0;
    case Coord::kAlignCorners:
      return out_len == 1.0 ? 0.0 : xr * static_cast<double>(in - 1) / (out_len - 1.0);
    case Coord::kAsymmetric: return xr / scale;
    case Coord::kTfHalfPixelNN: return (xr + 0.5) / scale;
    case Coord::kTfCrop:
      return out_len > 1.0 ? roi_start * static_cast<double>(in - 1) +
                                 xr * (roi_end - roi_start) * static_cast<double>(in - 1) /
                                     (out_len - 1.0)
                           : 0.5 * (roi_start + roi_end) * static_cast<double>(in - 1);
  }
  return 0.0;
}

double cubic_weight(double t, double a) {  // Keys' kernel, |t| in [0, 2)
  t = std::fabs(t);
  if (t <= 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  if (t < 2.0) return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
  return 0.0;
}

// Fills the taps of one output index. Returns the count (0: outside, extrapolate).
int axis_taps(const ResizeAttrs& a, int64_t x, double scale, int64_t in, double out_len,
              double roi_start, double roi_end, Tap* taps) {
  const double xo = source_coord(a.coord, x, scale, in, out_len, roi_start, roi_end);
  if (a.coord == Coord::kTfCrop && (xo < 0.0 || xo > static_cast<double>(in - 1))) return 0;
  auto clamp = [in](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
  const double fl = std::floor(xo);
  const double r = xo - fl;  // in [0, 1)
  const int64_t i0 = static_cast<int64_t>(fl);
  if (a.mode == Mode::kNearest) {
    int64_t i = i0;
    if (r > 0.0) {
      switch (a.nearest) {
        case Nearest::kRoundPreferFloor: i = r <= 0.5 ? i0 : i0 + 1; break;
        case Nearest::kRoundPreferCeil: i = r < 0.5 ? i0 : i0 + 1; break;
        case Nearest::kFloor: i = i0; break;
        case Nearest::kCeil: i = i0 + 1; break;
        case Nearest::kLegacy: i = scale < 1.0 ? i0 + 1 : i0; break;
      }
    }
    taps[0] = {clamp(i), 1.0f};
    return 1;
  }
  if (a.mode == Mode::kLinear) {
    if (r == 0.0) {
      taps[0] = {clamp(i0), 1.0f};
      return 1;
    }
    taps[0] = {clamp(i0), static_cast<float>(1.0 - r)};
    taps[1] = {clamp(i0 + 1), static_cast<float>(r)};
    return 2;
  }
  // Cubic: neighbours i0-1 .. i0+2 at distances r+1, r, 1-r, 2-r.
  double w[kMaxTaps];
  int64_t idx[kMaxTaps];
  double sum = 0.0;
  for (int k = 0; k < kMaxTaps; ++k) {
    idx[k] = i0 - 1 + k;
    w[k] = cubic_weight(r + 1.0 - k, a.cubic_a);
    if (a.exclude_outside && (idx[k] < 0 || idx[k] >= in)) w[k] = 0.0;
    sum += w[k];
  }
  int n = 0;
  for (int k = 0; k < kMaxTaps; ++k) {
    if (w[k] == 0.0) continue;
    taps[n++] = {clamp(idx[k]), static_cast<float>(a.exclude_outside ? w[k] / sum : w[k])};
  }
  return n;
}

class ResizeKernel final : public OpKernel {
 public:
  ResizeKernel(const Node& node, ResizeAttrs attrs)
      : OpKernel(node, "f32_resize_ref"), a_(std::move(attrs)) {}

  // The axis tables: per axis, one AxisEntry per output index and up to kMaxTaps taps.
  size_t scratch_bytes(const mn_tensor*, int, const mn_tensor* out, int) const override {
    const int64_t total = std::max<int64_t>(0, sum_dims(out[0]));
    return static_cast<size_t>(total) * (sizeof(AxisEntry) + kMaxTaps * sizeof(Tap)) + 64;
  }

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) * std::pow(taps_of(a_.mode), 2.0);
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], MN_F32, "X");
    const int rank = in[0].rank;
    if (num_outputs < 1 || out[0].rank != rank)
      fail("output " + (num_outputs < 1 ? std::string("missing") : shape_str(out[0])) +
           " must have X's rank " + std::to_string(rank));
    double scale[MN_MAX_RANK], len[MN_MAX_RANK], roi_s[MN_MAX_RANK], roi_e[MN_MAX_RANK];
    Dims od = Dims::of(out[0]);
    resolve(in, num_inputs, out[0], scale, len, roi_s, roi_e);
    check_output(out, num_outputs, 0, MN_F32, od);
    if (od.numel() == 0) return;
    if (rank == 0) {  // a scalar resizes to itself
      *static_cast<float*>(out[0].data) = *static_cast<const float*>(in[0].data);
      return;
    }

    // Axis tables in scratch (sized by scratch_bytes for these output dims).
    const int64_t total = sum_dims(out[0]);
    const size_t need = static_cast<size_t>(total) * (sizeof(AxisEntry) + kMaxTaps * sizeof(Tap));
    if (ctx.scratch_size() < need) fail("scratch too small for the resize tables");
    Tap* taps = static_cast<Tap*>(ctx.scratch());
    AxisEntry* entries = reinterpret_cast<AxisEntry*>(taps + total * kMaxTaps);
    const AxisEntry* axis_entries[MN_MAX_RANK];
    int64_t off = 0;
    for (int ax = 0; ax < rank; ++ax) {
      axis_entries[ax] = entries + off;
      for (int64_t o = 0; o < od[ax]; ++o) {
        const int32_t first = static_cast<int32_t>((off + o) * kMaxTaps);
        const int n = axis_taps(a_, o, scale[ax], in[0].dims[ax], len[ax], roi_s[ax], roi_e[ax],
                                taps + first);
        entries[off + o] = {first, n};
      }
      off += od[ax];
    }

    // Input strides (row-major).
    int64_t stride[MN_MAX_RANK];
    int64_t st = 1;
    for (int ax = rank - 1; ax >= 0; --ax) {
      stride[ax] = st;
      st *= in[0].dims[ax];
    }
    const float* x = static_cast<const float*>(in[0].data);
    float* y = static_cast<float*>(out[0].data);
    const int last = rank - 1;
    const int64_t Wo = od[last];
    const int64_t rows = od.numel() / Wo;
    const float extrap = a_.extrapolation;
    auto body = [&](size_t r0, size_t r1) {
      for (int64_t r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
        float* yr = y + r * Wo;
        // The outer (all but last) output index of row r, and its axes' entries.
        int64_t oi[MN_MAX_RANK];
        int64_t rem = r;
        bool outside = false;
        for (int ax = last - 1; ax >= 0; --ax) {
          oi[ax] = rem % od[ax];
          rem /= od[ax];
          if (axis_entries[ax][oi[ax]].count == 0) outside = true;
        }
        if (outside) {
          for (int64_t ow = 0; ow < Wo; ++ow) yr[ow] = extrap;
          continue;
        }
        for (int64_t ow = 0; ow < Wo; ++ow) yr[ow] = 0.0f;
        // Odometer over the outer axes' taps: each combination is one input row offset
        // with the product of its weights.
        int k[MN_MAX_RANK] = {0};
        for (;;) {
          int64_t base = 0;
          float wo = 1.0f;
          for (int ax = 0; ax < last; ++ax) {
            const AxisEntry& e = axis_entries[ax][oi[ax]];
            const Tap& t = taps[e.first + k[ax]];
            base += t.idx * stride[ax];
            wo *= t.w;
          }
          const float* xr = x + base;
          for (int64_t ow = 0; ow < Wo; ++ow) {
            const AxisEntry& e = axis_entries[last][ow];
            const Tap* t = taps + e.first;
            float s = 0.0f;
            for (int j = 0; j < e.count; ++j) s += t[j].w * xr[t[j].idx];
            yr[ow] += wo * s;
          }
          int ax = last - 1;
          for (; ax >= 0; --ax) {
            if (++k[ax] < axis_entries[ax][oi[ax]].count) break;
            k[ax] = 0;
          }
          if (ax < 0) break;
        }
        for (int64_t ow = 0; ow < Wo; ++ow)
          if (axis_entries[last][ow].count == 0) yr[ow] = extrap;
      }
    };
    const double per_row = static_cast<double>(Wo) * std::pow(taps_of(a_.mode), 2.0);
    ctx.parallel_for(static_cast<size_t>(rows), grain_for(per_row), std::move(body));
  }

 private:
  static int64_t sum_dims(const mn_tensor& t) {
    int64_t s = 0;
    for (int i = 0; i < t.rank; ++i) s += std::max<int64_t>(t.dims[i], 0);
    return s;
  }

  // Scales, resized lengths (see source_coord) and roi per axis from the run-time inputs,
  // checked against the output dims.
  void resolve(const mn_tensor* in, int num_inputs, const mn_tensor& out, double* scale,
               double* len_out, double* roi_s, double* roi_e) const {
    const int rank = in[0].rank;
    auto input = [&](int i) -> const mn_tensor* {
      return i >= 0 && i < num_inputs && present(in[i]) && numel(in[i]) > 0 ? &in[i] : nullptr;
    };
    for (int i = 0; i < rank; ++i) {
      roi_s[i] = 0.0;
      roi_e[i] = 1.0;
    }
    if (a_.coord == Coord::kTfCrop) {
      const mn_tensor* roi = input(a_.roi_in);
      if (!roi) fail("tf_crop_and_resize needs the roi input");
      if (roi->dtype != MN_F32 || numel(*roi) != 2 * rank)
        fail("roi " + shape_str(*roi) + " must be float32 with " + std::to_string(2 * rank) +
             " values");
      const float* rv = static_cast<const float*>(roi->data);
      for (int i = 0; i < rank; ++i) {
        roi_s[i] = rv[i];
        roi_e[i] = rv[rank + i];
      }
    }
    const mn_tensor* sizes = input(a_.sizes_in);
    const mn_tensor* scales = input(a_.scales_in);
    if (sizes) {
      if (sizes->dtype != MN_I64 || numel(*sizes) != rank)
        fail("sizes " + shape_str(*sizes) + " must be int64 with one value per dimension");
      const int64_t* sv = static_cast<const int64_t*>(sizes->data);
      for (int i = 0; i < rank; ++i) {
        if (sv[i] != out.dims[i])
          fail("output dim " + std::to_string(i) + " is " + std::to_string(out.dims[i]) +
               ", sizes says " + std::to_string(sv[i]));
        if (in[0].dims[i] == 0) fail("cannot resize an empty dimension");
        scale[i] = static_cast<double>(sv[i]) / static_cast<double>(in[0].dims[i]);
        len_out[i] = static_cast<double>(sv[i]);
      }
      return;
    }
    const float* sv = nullptr;
    if (scales) {
      if (scales->dtype != MN_F32 || numel(*scales) != rank)
        fail("scales " + shape_str(*scales) + " must be float32 with one value per dimension");
      sv = static_cast<const float*>(scales->data);
    } else if (!a_.scales_attr.empty()) {
      if (static_cast<int>(a_.scales_attr.size()) != rank)
        fail("scales has " + std::to_string(a_.scales_attr.size()) + " values for rank " +
             std::to_string(rank));
      sv = a_.scales_attr.data();
    } else {
      fail("neither scales nor sizes is given");
    }
    for (int i = 0; i < rank; ++i) {
      if (!(sv[i] > 0.0f)) fail("scales must be positive");
      scale[i] = static_cast<double>(sv[i]);
      len_out[i] = static_cast<double>(in[0].dims[i]) * scale[i];
      double len = len_out[i];
      if (a_.coord == Coord::kTfCrop) len *= roi_e[i] - roi_s[i];
      const int64_t want = static_cast<int64_t>(std::floor(len));
      if (want != out.dims[i])
        fail("output dim " + std::to_string(i) + " is " + std::to_string(out.dims[i]) +
             ", the scales give " + std::to_string(want));
    }
  }

  ResizeAttrs a_;
};

// Shared by Resize and Upsample: mode (and, for Resize-11+, the rest of the attributes).
ResizeAttrs parse_attrs(const Node& node, bool upsample) {
  ResizeAttrs a;
  const int v = node.op_version();
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest")
    a.mode = Mode::kNearest;
  else if (mode == "linear" || (upsample && mode == "bilinear"))
    a.mode = Mode::kLinear;
  else if (mode == "cubic" && !upsample)
    a.mode = Mode::kCubic;
  else
    node.fail("mode '" + mode + "' is not one of nearest, linear" + (upsample ? "" : ", cubic"));
  if (upsample || v < 11) {
    a.coord = Coord::kAsymmetric;
    a.nearest = Nearest::kLegacy;
    if (upsample && v < 9) {
      a.scales_attr = node.attr_floats("scales");
      if (a.scales_attr.empty()) node.fail("attribute scales is required");
    } else {
      a.scales_in = 1;
    }
    return a;
  }
  a.roi_in = 1;
  a.scales_in = 2;
  a.sizes_in = 3;
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm == "half_pixel")
    a.coord = Coord::kHalfPixel;
  else if (ctm == "pytorch_half_pixel")
    a.coord = Coord::kPytorchHalfPixel;
  else if (ctm == "align_corners")
    a.coord = Coord::kAlignCorners;
  else if (ctm == "asymmetric")
    a.coord = Coord::kAsymmetric;
  else if (ctm == "tf_half_pixel_for_nn")
    a.coord = Coord::kTfHalfPixelNN;
  else if (ctm == "tf_crop_and_resize")
    a.coord = Coord::kTfCrop;
  else
    node.fail("coordinate_transformation_mode '" + ctm + "' is not supported");
  const std::string nm = node.attr_string("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor")
    a.nearest = Nearest::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil")
    a.nearest = Nearest::kRoundPreferCeil;
  else if (nm == "floor")
    a.nearest = Nearest::kFloor;
  else if (nm == "ceil")
    a.nearest = Nearest::kCeil;
  else
    node.fail("nearest_mode '" + nm + "' is not supported");
  a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  // Opset 18 attributes that change the result are refused rather than ignored.
  if (node.has_attr("axes")) node.fail("attribute axes (opset 18) is not supported", MN_ERR_UNSUPPORTED);
  if (node.attr_int("antialias", 0) != 0)
    node.fail("antialias (opset 18) is not supported", MN_ERR_UNSUPPORTED);
  const std::string kar = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (kar != "stretch")
    node.fail("keep_aspect_ratio_policy '" + kar + "' is not supported", MN_ERR_UNSUPPORTED);
  return a;
}

std::unique_ptr<Kernel> make(const Node& node, bool upsample) {
  require_inputs(node, 1, upsample ? 2 : 4);
  require_input_dtype(node, 0, {MN_F32});
  ResizeAttrs a = parse_attrs(node, upsample);
  if (a.scales_in >= 0 && node.has_input(a.scales_in))
    require_input_dtype(node, a.scales_in, {MN_F32});
  if (a.sizes_in >= 0 && node.has_input(a.sizes_in))
    require_input_dtype(node, a.sizes_in, {MN_I64});
  if (a.coord == Coord::kTfCrop && !node.has_input(a.roi_in))
    node.fail("tf_crop_and_resize needs the roi input");
  return std::make_unique<ResizeKernel>(node, std::move(a));
}

double cost(const Node& node, bool upsample) {
  make(node, upsample);
  const std::string mode = node.attr_string("mode", "nearest");
  const double taps = mode == "nearest" ? 1.0 : mode == "cubic" ? 16.0 : 4.0;
  return numel_estimate(*node.output(0).t) * taps;
}

}  // namespace

double resize_bid(const Node& node) { return cost(node, false); }
std::unique_ptr<Kernel> resize_make(const Node& node) { return make(node, false); }
double upsample_bid(const Node& node) { return cost(node, true); }
std::unique_ptr<Kernel> upsample_make(const Node& node) { return make(node, true); }

}  // namespace cpu_dense
}  // namespace minnow
