#include "normalize.h"

#include <cmath>
#include <vector>

namespace minnow {
namespace caffe_ops {

void normalize_f32(const float* x, float* y, int64_t n_begin, int64_t n_end, int64_t c, int64_t spatial,
                   const float* scale, int64_t scale_count, bool across_spatial, float eps) {
  const int64_t dim = c * spatial;
  std::vector<double> norm(static_cast<size_t>(spatial));
  for (int64_t n = n_begin; n < n_end; ++n) {
    const float* xn = x + n * dim;
    float* yn = y + n * dim;
    if (across_spatial) {
      double sum = 0;
      for (int64_t i = 0; i < dim; ++i) sum += double(xn[i]) * xn[i];
      double inv = 1.0 / std::sqrt(sum + eps);
      for (int64_t ch = 0; ch < c; ++ch) {
        double s = scale[scale_count == 1 ? 0 : ch] * inv;
        for (int64_t i = 0; i < spatial; ++i) yn[ch * spatial + i] = static_cast<float>(xn[ch * spatial + i] * s);
      }
    } else {
      // Channel-outer loops keep the reads contiguous; the per-position sums live in `norm`.
      for (int64_t i = 0; i < spatial; ++i) norm[i] = eps;
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < spatial; ++i) norm[i] += double(xn[ch * spatial + i]) * xn[ch * spatial + i];
      for (int64_t i = 0; i < spatial; ++i) norm[i] = 1.0 / std::sqrt(norm[i]);
      for (int64_t ch = 0; ch < c; ++ch) {
        double s = scale[scale_count == 1 ? 0 : ch];
        for (int64_t i = 0; i < spatial; ++i) yn[ch * spatial + i] = static_cast<float>(xn[ch * spatial + i] * norm[i] * s);
      }
    }
  }
}

}  // namespace caffe_ops
}  // namespace minnow
