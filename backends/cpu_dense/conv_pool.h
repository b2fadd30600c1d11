// A Conv and the MaxPool that alone reads its output, run together (mn_kernel.
// fuse_producer on the MaxPool, pool.h): each worker takes a range of the pool's output
// rows and goes through it in bands, computing the conv rows a band's windows read into a
// buffer of its own (ConvPacked::run_rows) and pooling them from there
// (kernels::maxpool_plane). The conv's output, the largest tensor of the first layers
// (squeezenet1_1: 64 x 111x111, 3.2 MB; resnet: 64 x 112x112), is never written to memory
// and read back; the rows shared by two bands' windows (pool kernel minus stride) are
// computed by both.
#pragma once

#include <memory>

#include "conv_packed.h"
#include "kernels/conv_hwc.h"

namespace minnow {
namespace cpu_dense {

// What a Conv kernel (ops/conv.cc) shows the MaxPool that fuses it: its packed weights
// (null where it has none; shared, so they outlive either kernel) and the shape it was
// prepared for (null where not every shape was known).
class PackedConvSource {
 public:
  virtual std::shared_ptr<const ConvPacked> packed_conv() const = 0;
  virtual const kernels::ConvShape* packed_conv_shape() const = 0;
  // W as the model holds it ([M, C, kh, kw], alive as long as the model), or null where it
  // is not a constant.
  virtual const float* constant_weights() const = 0;

 protected:
  ~PackedConvSource() = default;
};

// The fused pair's geometry, planned once when the pool takes the conv: the two shapes,
// the pool rows of a band, and a scratch slot's pieces (floats, each from a cache line:
// the band's input rows, its conv rows, the conv's scratch, the pool's scratch), the most
// any band takes for any number of workers, so runs plan nothing.
struct ConvPoolPlan {
  kernels::ConvShape conv, pool;
  int64_t band_rows = 1;
  int64_t in = 0, conv_out = 0, conv_scratch = 0, pool_scratch = 0;
  int64_t slot_floats() const { return in + conv_out + conv_scratch + pool_scratch; }
  // A first conv (1-4 input channels, M a multiple of two vectors) with the output
  // channels as lanes (kernels/conv_hwc.h): W packed [C][kh][kw][M] here; the band's
  // input is padded into `in`, its conv rows are HWC in `conv_out`, the pool's row of
  // outputs in `pool_scratch`. Null: the conv's own run_rows.
  std::shared_ptr<const float> hwc_w;
  kernels::HwcConv hwc_conv;  // its geometry (hp per band; bias and clamp from the conv at run)
  kernels::HwcPool hwc_pool;  // its geometry (row0 per band)
};

// Whether the pair runs fused (2-D; the conv on its GEMM or direct path, one group; a
// pool with a row stride of 2 or more, so bands recompute few rows; a conv output of
// kConvPoolMinBytes or more, which outgrows L2) for the conv shape cs and the pool shape
// ps (pool_simd.h's geometry) over cs's output; if so, *plan is its plan.
constexpr int64_t kConvPoolMinBytes = int64_t(1) << 20;
// w: the conv's constant W ([M, C, kh, kw]) or null (then never channels as lanes).
bool conv_pool_plan(const ConvPacked& conv, const kernels::ConvShape& cs, const kernels::ConvShape& ps,
                    ConvPoolPlan* plan, const float* w = nullptr);
// The kernel's name for the fused pair's plan.
inline const char* conv_pool_kernel_name(const ConvPoolPlan& p) {
  return p.hwc_w ? "f32_conv_chw2hwc_12x2v__maxpool" : "f32_conv_maxpool__fused";
}
// Scratch for runs on `threads` threads (0: any count).
size_t conv_pool_scratch_bytes(const ConvPoolPlan& plan, int threads);
// y: the pool's output [N, M, PH, PW]; x, w_rows: the conv's X and W as the run gives them.
void conv_pool_run(const RunContext& ctx, const ConvPacked& conv, const ConvPoolPlan& plan, const float* x,
                   const float* w_rows, float* y);

}  // namespace cpu_dense
}  // namespace minnow
