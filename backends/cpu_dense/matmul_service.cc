// The "matmul.f32.dense.v1" service (core/include/minnow/services.h): Y = X * W^T + beta*Y
// for a constant W, exported so op plugins (LSTM, GRU ...) reuse this backend's GEMM
// instead of carrying their own.
//
// Self-contained on purpose (only plugin.h/services.h): registered from
// cpu_dense_plugin.cc with one add_service call.
//
// prepare_weights packs W[N,K] transposed into column panels of kPanel outputs,
// Wp[panel][k][0..kPanel), so the inner loop is a unit-stride multiply-add over kPanel
// independent accumulators (vectorised by the compiler); the last panel is zero-padded.
// multiply splits panels (and rows when there are many) over ctx->parallel_for.
#include <minnow/plugin.h>
#include <minnow/services.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace minnow {
namespace cpu_dense {

namespace {

constexpr int64_t kPanel = 16;  // outputs per panel: one AVX-512 register, two AVX2 ones
constexpr int64_t kRows = 4;    // rows of X per micro-block: reuses each loaded W panel 4x

struct PackedW {
  int64_t n = 0, k = 0, panels = 0;
  float* data = nullptr;  // panels * k * kPanel floats, 64-byte aligned
};

void* dense_prepare(const float* w, int64_t n, int64_t k, double* cost_per_row) {
  if (!w || n <= 0 || k <= 0) return nullptr;
  auto* p = new (std::nothrow) PackedW;
  if (!p) return nullptr;
  p->n = n;
  p->k = k;
  p->panels = (n + kPanel - 1) / kPanel;
  size_t bytes = size_t(p->panels) * size_t(k) * kPanel * sizeof(float);
  bytes = (bytes + 63) / 64 * 64;
  p->data = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p->data) {
    delete p;
    return nullptr;
  }
  std::memset(p->data, 0, bytes);
  for (int64_t j = 0; j < n; ++j) {
    float* panel = p->data + (j / kPanel) * k * kPanel;
    for (int64_t kk = 0; kk < k; ++kk) panel[kk * kPanel + j % kPanel] = w[j * k + kk];
  }
  // About 2 flops per weight per row at a few Gflop/s on one core.
  if (cost_per_row) *cost_per_row = double(n) * double(k) * 0.25;
  return p;
}

// Rows [r0, r1) x panel `pi` of the product.
void block(const PackedW& p, int64_t pi, int64_t r0, int64_t r1, const float* x, int64_t ldx,
           float beta, float* y, int64_t ldy) {
  const float* wp = p.data + pi * p.k * kPanel;
  const int64_t j0 = pi * kPanel, cols = std::min(kPanel, p.n - j0);
  int64_t r = r0;
  for (; r + kRows <= r1; r += kRows) {
    float acc[kRows][kPanel] = {};
    const float* x0 = x + r * ldx;
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const float* wr = wp + kk * kPanel;
      for (int64_t q = 0; q < kRows; ++q) {
        const float xv = x0[q * ldx + kk];
        for (int64_t c = 0; c < kPanel; ++c) acc[q][c] += xv * wr[c];
      }
    }
    for (int64_t q = 0; q < kRows; ++q) {
      float* yr = y + (r + q) * ldy + j0;
      if (beta == 0.f)
        for (int64_t c = 0; c < cols; ++c) yr[c] = acc[q][c];
      else
        for (int64_t c = 0; c < cols; ++c) yr[c] = acc[q][c] + beta * yr[c];
    }
  }
  for (; r < r1; ++r) {
    float acc[kPanel] = {};
    const float* xr = x + r * ldx;
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const float xv = xr[kk];
      const float* wr = wp + kk * kPanel;
      for (int64_t c = 0; c < kPanel; ++c) acc[c] += xv * wr[c];
    }
    float* yr = y + r * ldy + j0;
    if (beta == 0.f)
      for (int64_t c = 0; c < cols; ++c) yr[c] = acc[c];
    else
      for (int64_t c = 0; c < cols; ++c) yr[c] = acc[c] + beta * yr[c];
  }
}

struct Job {
  const PackedW* p;
  int64_t m, row_blocks, rows_per_block;
  const float* x;
  int64_t ldx;
  float beta;
  float* y;
  int64_t ldy;
};

void run_range(void* user, size_t begin, size_t end) {
  const Job& j = *static_cast<const Job*>(user);
  for (size_t t = begin; t < end; ++t) {
    int64_t pi = int64_t(t) % j.p->panels, rb = int64_t(t) / j.p->panels;
    int64_t r0 = rb * j.rows_per_block, r1 = std::min(j.m, r0 + j.rows_per_block);
    block(*j.p, pi, r0, r1, j.x, j.ldx, j.beta, j.y, j.ldy);
  }
}

mn_status dense_multiply(const void* handle, const mn_run_ctx* ctx, int64_t m, const float* x,
                         int64_t ldx, float beta, float* y, int64_t ldy) {
  const auto* p = static_cast<const PackedW*>(handle);
  if (!p || m < 0 || (m > 0 && (!x || !y)) || ldx < p->k || ldy < p->n) return MN_ERR_INVALID_ARGUMENT;
  if (m == 0) return MN_OK;
  // Tasks = panels x row blocks; row blocks of 64 keep a task's W panel in L1/L2.
  Job job{p, m, 0, 64, x, ldx, beta, y, ldy};
  job.row_blocks = (m + job.rows_per_block - 1) / job.rows_per_block;
  size_t tasks = size_t(job.row_blocks * p->panels);
  double work = double(m) * double(p->n) * double(p->k);
  if (ctx && ctx->parallel_for && ctx->num_threads > 1 && work > 32768.0 && tasks > 1) {
    ctx->parallel_for(ctx->host, tasks, 1, run_range, &job);
  } else {
    run_range(&job, 0, tasks);
  }
  return MN_OK;
}

void dense_release(void* handle) {
  auto* p = static_cast<PackedW*>(handle);
  if (!p) return;
  std::free(p->data);
  delete p;
}

const char* dense_kernel_name(const void*) { return "f32_matmul_dense_panel16"; }

const mn_matmul_service kDenseMatmul = {sizeof(mn_matmul_service), "cpu_dense", dense_prepare,
                                        dense_multiply, dense_release, dense_kernel_name};

}  // namespace

// For cpu_dense_plugin.cc (add_service) and the unit tests.
const mn_matmul_service* dense_matmul_service() { return &kDenseMatmul; }

}  // namespace cpu_dense
}  // namespace minnow
