#include "gemm_packed.h"

#include <algorithm>
#include <limits>

namespace minnow {
namespace cpu_dense {

namespace {

struct Job {
  const kernels::PackedB* b;
  int64_t M, row_block, row_blocks;
  const float* a;
  int64_t a_rs, a_cs;
  float* c;
  int64_t ldc;
  float beta, lo, hi;
};

// Task t = (row block, column panel), panels fastest: neighbouring tasks share A rows.
void run_tasks(void* user, size_t t0, size_t t1) {
  const Job& j = *static_cast<const Job*>(user);
  for (size_t t = t0; t < t1; ++t) {
    const int64_t q = int64_t(t) % j.b->panels, rb = int64_t(t) / j.b->panels;
    const int64_t m0 = rb * j.row_block, m1 = std::min(j.M, m0 + j.row_block);
    kernels::gemm_packed_b(*j.b, j.a, j.a_rs, j.a_cs, j.c, j.ldc, m0, m1, q, q + 1, j.beta,
                           j.lo, j.hi);
  }
}

}  // namespace

void run_packed_b(const mn_run_ctx* ctx, const kernels::PackedB& b, int64_t M, const float* a,
                  int64_t a_rs, int64_t a_cs, float* c, int64_t ldc, float beta, float lo,
                  float hi) {
  if (M <= 0 || b.N <= 0) return;
  // Row blocks of 8 tiles (48 rows): one B panel (K x NR) is reused over them from L1/L2.
  Job j{&b, M, 8 * kernels::kGemmMR, 0, a, a_rs, a_cs, c, ldc, beta, lo, hi};
  j.row_blocks = (M + j.row_block - 1) / j.row_block;
  const size_t tasks = size_t(j.row_blocks * b.panels);
  const double work = 2.0 * double(M) * double(b.N) * double(b.K);
  if (ctx && ctx->parallel_for && ctx->num_threads > 1 && tasks > 1 && work > 1e5) {
    // About 64k flops per task at least, so scheduling stays small.
    const double per_task = work / double(tasks);
    const size_t grain = std::max<size_t>(1, size_t(65536.0 / std::max(1.0, per_task)));
    ctx->parallel_for(ctx->host, tasks, grain, run_tasks, &j);
  } else {
    run_tasks(&j, 0, tasks);
  }
}

}  // namespace cpu_dense
}  // namespace minnow
