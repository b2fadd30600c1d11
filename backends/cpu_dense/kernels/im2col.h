// The B operands of the GEMM convolutions (conv_gemm.cc, conv_pixrows.cc): blocks of the
// im2col matrix B[k, p] = X[c, id, ih, iw] for k = (c, kd, kh, kw) and output pixel p, built
// into scratch in panel layout dst[panel][kk][0..nr): each panel holds nr consecutive
// pixels of kc consecutive k. Internal to the kernels (not part of conv.h's interface).
#pragma once

#include <cstdint>

#include "kernels/conv.h"

namespace minnow {
namespace cpu_dense {
namespace kernels {

// General tiled im2col (any rank): rows [k0, k0 + kc), pixels [j0, j0 + cols); `tab`: 4 *
// cols ints.
void im2col_block(const ConvShape& s, const float* xg, int64_t k0, int64_t kc, int64_t j0,
                  int64_t cols, int64_t nr, float* dst, int32_t* tab);

// 1x1 convolutions with strides (resnet's downsample convs) whose pixels all read inside
// X (no padding reached): B[c, p] = X[c, od * sd, oh * sh, ow * sw], a gather of each
// channel through one table of pixel offsets per block (`tab`: cols ints).
bool subsample_applies(const ConvShape& s);
void subsample_offsets(const ConvShape& s, int64_t j0, int64_t cols, int32_t* tab);
void subsample_block(const ConvShape& s, const float* xg, const int32_t* tab, int64_t k0,
                     int64_t kc, int64_t cols, int64_t nr, float* dst);

// 2-D convolutions that are not pointwise: the input rows a block's pixels read, copied
// once per k-block into a zero-padded window whose rows are split by column phase, then
// every panel row is one to three plain copies from it.
struct WindowGeom {
  int64_t oh0 = 0, rows = 0;  // first output row, window rows per channel
  int64_t pwid = 0, rs = 0;   // floats per phase of a window row, per window row
};
bool window_applies(const ConvShape& s);  // and not subsample_applies
// Window rows for pixels [j0, j1).
WindowGeom window_geom(const ConvShape& s, int64_t j0, int64_t j1);
// Most window floats one k-block of kc rows needs for a block of nc pixels.
int64_t window_floats(const ConvShape& s, int64_t kc, int64_t nc);
// The window of channels [c0, c1) of this group's X (xg) for geometry g.
void window_rows(const ConvShape& s, const float* xg, int64_t c0, int64_t c1, const WindowGeom& g,
                 float* win);
// The runs of pixels [j0, j0 + cols), panel by panel; `tab`: window_runs_ints(cols, nr) ints.
struct WindowRuns {
  const int32_t *first, *lane, *src, *len;
};
inline int64_t window_runs_ints(int64_t cols, int64_t nr) { return (cols + nr - 1) / nr + 1 + 3 * cols; }
WindowRuns window_runs(const ConvShape& s, const WindowGeom& g, int64_t j0, int64_t cols,
                       int64_t nr, int32_t* tab);
// The B block of rows [k0, k0 + kc), pixels [j0, j0 + cols) from the window of channels
// from c0 and the pixels' runs; `boff`: kc ints.
void window_block(const ConvShape& s, const float* win, int64_t c0, const WindowGeom& g,
                  const WindowRuns& r, int64_t k0, int64_t kc, int64_t cols, int64_t nr,
                  float* dst, int32_t* boff);
// One panel of window_block whose rows are runs [first, last) of r: dst[kk * nr + lane]
// from win + boff[kk] + src, for kk < kc (SIMD, kernels/f32_window_hwy.cc).
void window_copy_runs(const float* win, const int32_t* boff, int64_t kc, const WindowRuns& r,
                      int32_t first, int32_t last, int64_t nr, float* dst);

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
