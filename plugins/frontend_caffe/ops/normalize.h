// caffe::Normalize (SSD's NormalizeLayer), for NCHW-like float tensors [N, C, spatial...]:
//   across_spatial = 1: y = x / sqrt(sum over C*spatial of x^2 + eps) * scale[c]
//   across_spatial = 0: y = x / sqrt(sum over C of x^2 at that position + eps) * scale[c]
// scale has 1 value (channel_shared) or C. Accumulation is in double, as the reference.
#pragma once

#include <cstdint>

namespace minnow {
namespace caffe_ops {

// Normalises samples [n_begin, n_end) of x (n x c x spatial) into y.
void normalize_f32(const float* x, float* y, int64_t n_begin, int64_t n_end, int64_t c, int64_t spatial,
                   const float* scale, int64_t scale_count, bool across_spatial, float eps);

}  // namespace caffe_ops
}  // namespace minnow
