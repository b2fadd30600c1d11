// MN_SERVICE_MATMUL_SPARSE: Y[M,N] = X[M,K] * W^T + beta * Y for op plugins (the LSTM /
// GRU gate GEMMs). prepare_weights declines (null) below the break-even sparsity, so the
// caller keeps its dense GEMM there.
#include "ops.h"

#include <minnow/services.h>

#include <memory>
#include <new>

namespace minnow {
namespace cpu_sparse {

namespace {

struct Handle {
  SparseMatrix w;
  const char* name;
};

void* prepare_weights(const float* w, int64_t n, int64_t k, double* cost_per_row) {
  if (!w || n <= 0 || k <= 0) return nullptr;
  try {
    const LayoutChoice lc = choose_layout(Kind::kFc, w, n, k, false);
    if (!lc.ok) return nullptr;
    if (cost_per_row)
      *cost_per_row = 2.0 * static_cast<double>(n) * static_cast<double>(k) * kDenseNsPerFlop * lc.ratio;
    std::unique_ptr<Handle> h(new Handle{pack(w, n, k, k, lc.shape), kernel_name(Kind::kFc, lc.shape)});
    add_rows_layout(&h->w, rows_tile_width());
    if (h->w.tiled) h->name = tiled_fc_kernel_name(h->w);
    return h.release();
  } catch (...) {  // nothing may cross the C boundary; declining is always safe
    return nullptr;
  }
}

mn_status multiply(const void* handle, const mn_run_ctx* ctx, int64_t m, const float* x,
                   int64_t ldx, float beta, float* y, int64_t ldy) {
  if (!handle || !x || !y || m < 0) return MN_ERR_INVALID_ARGUMENT;
  const SparseMatrix& w = static_cast<const Handle*>(handle)->w;
  if (ldx < w.cols || ldy < w.rows) return MN_ERR_INVALID_ARGUMENT;
  const RowsArgs args{x, ldx, 0, m, nullptr, beta, y, ldy};
  mn_error err{};
  return plugin::guarded(&err, [&] {
    if (ctx) {
      RunContext(ctx).parallel_for(static_cast<size_t>(rows_units(w)), rows_unit_grain(w, double(m)),
                                   [&](size_t b0, size_t b1) {
                                     rows(w, args, static_cast<int64_t>(b0), static_cast<int64_t>(b1));
                                   });
    } else {
      rows(w, args, 0, rows_units(w));
    }
    return MN_OK;
  });
}

void release(void* handle) { delete static_cast<Handle*>(handle); }

const char* name_of(const void* handle) {
  return handle ? static_cast<const Handle*>(handle)->name : "f32_sparse_fc";
}

}  // namespace

const mn_matmul_service* matmul_service() {
  static const mn_matmul_service service = {sizeof(mn_matmul_service), "cpu_sparse",
                                            prepare_weights, multiply, release, name_of};
  return &service;
}

}  // namespace cpu_sparse
}  // namespace minnow
