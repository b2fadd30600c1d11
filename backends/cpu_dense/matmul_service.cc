// The "matmul.f32.dense.v1" service (core/include/minnow/services.h): Y = X * W^T + beta*Y
// for a constant W, exported so op plugins (LSTM, GRU ...) reuse this backend's GEMM
// instead of carrying their own.
//
// Registered from cpu_dense_plugin.cc with one add_service call.
//
// prepare_weights packs W[N,K] transposed (B' = W^T) into the column panels of the packed
// GEMM (kernels/gemm.h); multiply runs the SIMD micro-kernel over ctx->parallel_for
// (gemm_packed.h), with beta in the epilogue.
#include <minnow/plugin.h>
#include <minnow/services.h>

#include <new>

#include "gemm_packed.h"

namespace minnow {
namespace cpu_dense {

namespace {

void* dense_prepare(const float* w, int64_t n, int64_t k, double* cost_per_row) {
  if (!w || n <= 0 || k <= 0) return nullptr;
  try {
    auto* p = new kernels::PackedB(kernels::pack_b(w, k, n, 1, k, 1.0f, nullptr));
    // Kept in the units cpu_sparse's service was calibrated against (the reference
    // kernels'); see docs/ARCHITECTURE.md "Bids". Re-measure both together.
    if (cost_per_row) *cost_per_row = double(n) * double(k) * 0.25;
    return p;
  } catch (...) {
    return nullptr;
  }
}

mn_status dense_multiply(const void* handle, const mn_run_ctx* ctx, int64_t m, const float* x,
                         int64_t ldx, float beta, float* y, int64_t ldy) {
  const auto* p = static_cast<const kernels::PackedB*>(handle);
  if (!p || m < 0 || (m > 0 && (!x || !y)) || ldx < p->K || ldy < p->N) return MN_ERR_INVALID_ARGUMENT;
  if (m == 0) return MN_OK;
  run_packed_b(ctx, *p, m, x, ldx, 1, y, ldy, beta);
  return MN_OK;
}

void dense_release(void* handle) { delete static_cast<kernels::PackedB*>(handle); }

const char* dense_kernel_name(const void*) { return "f32_gemm_6x2v_packed"; }

const mn_matmul_service kDenseMatmul = {sizeof(mn_matmul_service), "cpu_dense", dense_prepare,
                                        dense_multiply, dense_release, dense_kernel_name};

}  // namespace

// For cpu_dense_plugin.cc (add_service) and the unit tests.
const mn_matmul_service* dense_matmul_service() { return &kDenseMatmul; }

}  // namespace cpu_dense
}  // namespace minnow
