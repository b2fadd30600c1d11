// Running the packed-B GEMM of kernels/gemm.h over the context's threads: Gemm and MatMul
// with a constant B (weights packed at prepare time) and the matmul service.
#pragma once

#include <limits>

#include <minnow/plugin.h>

#include "kernels/gemm.h"

namespace minnow {
namespace cpu_dense {

// C[M, N] = A * B' (+ packed bias) (+ beta * C); A(i, k) = a[i * a_rs + k * a_cs]. Splits
// column panels and row blocks over ctx->parallel_for (ctx may be null: one thread).
// lo / hi: the outputs' clamp (a fused Relu / Clip), after bias and beta.
void run_packed_b(const mn_run_ctx* ctx, const kernels::PackedB& b, int64_t M, const float* a,
                  int64_t a_rs, int64_t a_cs, float* c, int64_t ldc, float beta,
                  float lo = -std::numeric_limits<float>::infinity(),
                  float hi = std::numeric_limits<float>::infinity());

}  // namespace cpu_dense
}  // namespace minnow
