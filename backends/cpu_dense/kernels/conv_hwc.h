// First convolutions with the output channels as the vector lanes (as ONNX Runtime's
// NCHWc first conv): an image's first conv has 1-4 input channels, so an im2col GEMM
// has a K of 27-147 and rebuilds a large B, and the pixels-as-lanes tile spends its
// loads on B. Here each tap loads two vectors of output channels' weights and multiplies
// them by one input float broadcast, for 12 output pixels at once (6 with 16 vector
// registers); the output comes out pixel-major (HWC), which the max pool after it reads
// (maxpool_hwc_to_planes), writing its own output as channel planes.
#pragma once

#include <cstdint>
#include <limits>

namespace minnow {
namespace cpu_dense {
namespace kernels {

// One conv over a zero-padded input band: xp holds C planes of hp rows x wp floats (the
// padding included, row 0 the first row output row 0's windows read); wt is W packed
// [C][KH][KW][M]; y gets rows of OW pixels x M channels. M a multiple of 2 lanes.
struct HwcConv {
  int64_t C = 0, M = 0, KH = 1, KW = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t hp = 0, wp = 0, OW = 0;
  const float* bias = nullptr;  // [M] or null
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
};
// The vector lanes (floats) of this CPU's kernel.
int64_t conv_hwc_lanes();
// Output rows [oh0, oh1) into y (row oh at y + oh * OW * M); whether an output is NaN.
bool conv_hwc_rows(const HwcConv& g, const float* xp, const float* wt, int64_t oh0, int64_t oh1, float* y);

// Max pool of HWC rows: input rows [row0, row0 + rows) of an IH x IW x M map in `in`
// (IW x M floats a row); windows KH x KW, strides, padding ph / pw before (after: the map
// ends the windows); output planes y[m] of PH x PW. NaN propagates.
struct HwcPool {
  int64_t M = 0, IH = 0, IW = 0, KH = 1, KW = 1, sh = 1, sw = 1, ph = 0, pw = 0, PH = 0, PW = 0;
  int64_t row0 = 0;
};
// Pool rows [ph0, ph1) (their windows within the rows `in` holds); tmp: PW x M floats.
// `nan`: the rows may hold a NaN (conv_hwc_rows said so): compared NaN-propagating.
void maxpool_hwc_to_planes(const HwcPool& g, const float* in, int64_t ph0, int64_t ph1, float* y, float* tmp,
                           bool nan);

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
