// Window geometry shared by Conv, MaxPool and AveragePool: the kernel_shape / strides /
// dilations / pads / auto_pad / ceil_mode attributes, and their resolution against concrete
// input dims (ONNX rules).
//
// The kernels lift 1-D and 2-D problems to 3-D (leading spatial dims of size 1, kernel 1,
// stride 1, no padding), so one loop nest serves every spatial rank.
#pragma once

#include "common.h"

namespace minnow {
namespace cpu_dense {

constexpr int kMaxSpatial = 3;  // 1-D, 2-D, 3-D

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct SpatialAttrs {
  int nsp = 0;  // spatial rank
  int64_t kernel[kMaxSpatial] = {1, 1, 1};
  int64_t stride[kMaxSpatial] = {1, 1, 1};
  int64_t dilation[kMaxSpatial] = {1, 1, 1};
  int64_t pad_begin[kMaxSpatial] = {0, 0, 0};
  int64_t pad_end[kMaxSpatial] = {0, 0, 0};
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
};

// Reads the attributes for `nsp` spatial dims and validates them (lengths, positivity,
// auto_pad value). `weight_kernel` (Conv: W's spatial dims, may hold -1) is used when
// kernel_shape is absent and checked against it when present; pools pass null and
// kernel_shape is then required.
SpatialAttrs parse_spatial(const Node& node, int nsp, const int64_t* weight_kernel,
                           bool allow_ceil_mode);

// One spatial dim, resolved for a concrete input size.
struct Axis {
  int64_t in = 1, out = 1, k = 1, s = 1, d = 1, pb = 0, pe = 0;
};

// Resolves pads (auto_pad) for input size `in` and the output size ONNX shape inference
// gives (floor; for pools with ceil_mode, the ceil value). With ceil_mode,
// `*out_alt` receives the ceil value after the "last window must start inside the input
// or its left padding" correction that newer ONNX / PyTorch apply (may equal *out).
// Returns false if the window does not fit (output would be < 1).
bool resolve_axis(const SpatialAttrs& a, int i, int64_t in, Axis* ax, int64_t* out_alt);

// Lifts the `nsp` trailing dims of a rank-(2+nsp) tensor into three axes (leading ones).
// `out_dims` are the output's spatial dims, checked against the resolved geometry; on a
// mismatch, returns a message (empty string = fine).
std::string resolve_geometry(const SpatialAttrs& a, const int64_t* in_dims, const int64_t* out_dims,
                             Axis axes[kMaxSpatial]);

// Valid kernel taps [*lo, *hi) for a window starting at `start` (may be negative) over an
// input of size `in`: those k with 0 <= start + k*d < in.
inline void valid_taps(int64_t start, int64_t d, int64_t k, int64_t in, int64_t* lo, int64_t* hi) {
  int64_t l = start >= 0 ? 0 : (-start + d - 1) / d;
  int64_t h = start >= in ? 0 : (in - 1 - start) / d + 1;
  *lo = std::min(l, k);
  *hi = std::max(*lo, std::min(h, k));
}

}  // namespace cpu_dense
}  // namespace minnow
