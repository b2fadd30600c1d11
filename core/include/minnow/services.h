/* Named services backends export through the host (mn_registrar.add_service /
 * mn_host_api.get_service), so op plugins reuse the best kernels instead of carrying their
 * own. A service is a struct of function pointers beginning with struct_size; its name
 * carries its version (".v1"): a changed layout gets a new name.
 */
#ifndef MINNOW_SERVICES_H
#define MINNOW_SERVICES_H

#include <minnow/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Multiply by a constant weight matrix: Y[M,N] = X[M,K] * W^T + beta * Y, with W given
 * [N,K] row-major (as Gemm with transB=1, or an LSTM's gate weights). The provider packs
 * (dense) or compresses (sparse) W once in prepare_weights; multiply is called per run
 * and may use ctx->parallel_for. */
#define MN_SERVICE_MATMUL_DENSE "matmul.f32.dense.v1"
#define MN_SERVICE_MATMUL_SPARSE "matmul.f32.sparse.v1"

typedef struct mn_matmul_service {
  size_t struct_size;
  const char* provider; /* backend name, for profiles */
  /* Returns a handle, or null when the provider declines (e.g. the sparse one below the
   * sparsity where it wins). *cost_per_row: estimated ns per row of X, for choosing. */
  void* (*prepare_weights)(const float* w, int64_t n, int64_t k, double* cost_per_row);
  mn_status (*multiply)(const void* handle, const mn_run_ctx* ctx, int64_t m, const float* x,
                        int64_t ldx, float beta, float* y, int64_t ldy);
  void (*release)(void* handle);
  const char* (*kernel_name)(const void* handle); /* may be null */
} mn_matmul_service;

#ifdef __cplusplus
}
#endif

#endif /* MINNOW_SERVICES_H */
