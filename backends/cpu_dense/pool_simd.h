// The SIMD fast path of MaxPool (pool.h): 1-D / 2-D float max pooling through
// kernels::maxpool_plane, one plane per task, scratch slots as in conv_packed.cc.
#pragma once

#include "kernels/conv.h"
#include "spatial.h"

namespace minnow {
namespace cpu_dense {

// The geometry as the SIMD kernel wants it; false when it does not apply (3-D windows).
bool maxpool_simd_shape(const Axis ax[kMaxSpatial], int64_t N, int64_t C, kernels::ConvShape* s);
// threads: the runs' thread count (what run_in_slots takes on it), or 0 for any.
size_t maxpool_simd_scratch(const kernels::ConvShape& s, int threads = 0);
void maxpool_simd_run(const RunContext& ctx, const kernels::ConvShape& s, const float* x, float* y);

}  // namespace cpu_dense
}  // namespace minnow
