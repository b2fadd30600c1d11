// The sparse kernels (reference and SIMD) against a dense matrix product, over odd shapes,
// every block shape, sparsity from 0 to 99 %, with and without bias and beta.
// Built for the host and, by scripts/arm64/test_kernels.sh, for aarch64 under qemu.
#include <doctest/doctest.h>

#include "kernels.h"
#include "prune.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

using namespace minnow::cpu_sparse;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// max |a - b| / (1 + |b|) over all elements; NaN anywhere fails.
void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - double(want[i])) / (1.0 + std::fabs(want[i]));
    if (!(e <= worst)) {  // catches NaN
      worst = std::isnan(e) ? 1e30 : e;
      at = i;
      if (std::isnan(e)) break;
    }
  }
  INFO(what << ": worst error " << worst << " at " << at << " (got " << got[at] << ", want "
            << want[at] << ")");
  CHECK(worst < 1e-4);
}

std::vector<float> random_vec(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

const double kSparsities[] = {0.0, 0.3, 0.5, 0.7, 0.9, 0.95, 0.99};
const BlockShape kPruneShapes[] = {{1, 1}, {1, 4}, {4, 1}, {1, 8}};

}  // namespace

TEST_CASE("pack keeps every nonzero, and only blocks holding one") {
  std::mt19937 rng(1);
  for (BlockShape s : kBlockShapes) {
    const int64_t rows = 13, cols = 24;
    auto w = random_vec(rows * cols, rng);
    prune_blocks(w.data(), rows, cols, s, 0.6);
    SparseMatrix m = pack(w.data(), rows, cols, cols, s, 2.0f);
    CHECK(m.row_ptr.size() == size_t(m.block_rows() + 1));
    // Unpack and compare.
    std::vector<float> back(rows * cols, 0.0f);
    for (int64_t br = 0; br < m.block_rows(); ++br)
      for (int32_t b = m.row_ptr[br]; b < m.row_ptr[br + 1]; ++b) {
        CHECK(m.col[b] % s.c == 0);
        bool any = false;
        for (int r = 0; r < s.r; ++r)
          for (int c = 0; c < s.c; ++c) {
            const float v = m.values[b * s.r * s.c + r * s.c + c];
            any |= v != 0.0f;
            if (br * s.r + r < rows) back[(br * s.r + r) * cols + m.col[b] + c] = v;
            else CHECK(v == 0.0f);
          }
        CHECK(any);
      }
    for (size_t i = 0; i < w.size(); ++i) CHECK(back[i] == 2.0f * w[i]);
    const double sp = block_sparsity(w.data(), rows, cols, s);
    CHECK(sp == doctest::Approx(1.0 - double(m.blocks()) / double(m.block_rows() * (cols / s.c))));
    // The transposed reader sees the same matrix.
    std::vector<float> wt(cols * rows);
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t k = 0; k < cols; ++k) wt[k * rows + n] = w[n * cols + k];
    SparseMatrix mt = pack_transposed(wt.data(), rows, cols, rows, s, 2.0f);
    CHECK(mt.col == m.col);
    CHECK(mt.values == m.values);
    CHECK(block_sparsity(wt.data(), rows, cols, s, true) == doctest::Approx(sp));
  }
}

TEST_CASE("pack refuses a block shape that does not divide the columns") {
  std::vector<float> w(5 * 6, 1.0f);
  CHECK_THROWS_AS(pack(w.data(), 5, 6, 6, BlockShape{1, 4}), std::invalid_argument);
  CHECK_NOTHROW(pack(w.data(), 5, 6, 6, BlockShape{4, 1}));
}

TEST_CASE("spmm (columns form) matches the dense product") {
  std::printf("cpu_sparse kernels: SIMD target %s\n", simd_target_name());
  std::mt19937 rng(42);
  const int64_t row_counts[] = {1, 3, 7, 17, 33};
  const int64_t col_counts[] = {8, 13, 24, 40};
  // Columns: 1 and 7 (less than a vector), 49 / 196 (the 7x7 / 14x14 layers: a partial
  // last vector), 200 (25 AVX2 vectors: uneven strips), others odd.
  const int64_t js[] = {1, 5, 7, 16, 49, 67, 130, 196, 200};
  const int64_t lanes = spmm_lanes();
  int cases = 0;
  for (BlockShape prune_shape : kPruneShapes)
    for (BlockShape s : kBlockShapes)
      for (double sp : kSparsities)
        for (int64_t N : row_counts)
          for (int64_t K : col_counts)
            for (int64_t J : js) {
              if (!shape_fits(prune_shape, N, K) || !shape_fits(s, N, K)) continue;
              if ((N * K * J) % 3 != cases % 3) continue;  // a third of the grid, varied
              ++cases;
              auto w = random_vec(N * K, rng);
              prune_blocks(w.data(), N, K, prune_shape, sp);
              // Strides wider than J; every other case x padded exactly to whole vectors
              // (the SIMD tail path, reading up to the very end of the buffer).
              const int64_t padded_ld = (J + lanes - 1) / lanes * lanes;
              const int64_t ldx = cases % 2 ? padded_ld : J + 3, ldy = J + 2;
              auto x = random_vec(K * ldx, rng);
              auto bias = random_vec(N, rng);
              const bool use_bias = cases % 2 == 0;
              const float beta = cases % 3 == 0 ? 0.5f : 0.0f;
              auto y0 = random_vec(N * ldy, rng);
              std::vector<float> want = y0;
              for (int64_t n = 0; n < N; ++n)
                for (int64_t j = 0; j < J; ++j) {
                  double acc = use_bias ? bias[n] : 0.0;
                  for (int64_t k = 0; k < K; ++k) acc += double(w[n * K + k]) * x[k * ldx + j];
                  want[n * ldy + j] = float(acc + beta * y0[n * ldy + j]);
                }
              SparseMatrix m = pack(w.data(), N, K, K, s);
              SpmmArgs a{x.data(), ldx, J, use_bias ? bias.data() : nullptr, beta, nullptr, ldy};
              std::vector<float> got_ref = y0, got = y0;
              if (beta == 0.0f)  // beta 0 must overwrite, garbage included
                for (int64_t n = 0; n < N; ++n)
                  for (int64_t j = 0; j < J; ++j) got_ref[n * ldy + j] = got[n * ldy + j] = kNaN;
              a.y = got_ref.data();
              spmm_ref(m, a, 0, m.block_rows());
              a.y = got.data();
              // Two calls over a split of the block rows, as parallel_for would make.
              const int64_t half = m.block_rows() / 2;
              spmm(m, a, 0, half);
              spmm(m, a, half, m.block_rows());
              const std::string what = "spmm " + s.str() + " pruned " + prune_shape.str() +
                                       " sp " + std::to_string(sp) + " N" + std::to_string(N) +
                                       " K" + std::to_string(K) + " J" + std::to_string(J) +
                                       " ldx" + std::to_string(ldx);
              expect_close(got_ref, want, what + " (ref)");
              expect_close(got, want, what + " (simd)");
            }
  CHECK(cases > 200);
}

TEST_CASE("rows (fully connected form) matches the dense product") {
  std::mt19937 rng(7);
  const int64_t out_counts[] = {1, 5, 10, 17, 31, 64};
  const int64_t in_counts[] = {8, 16, 56, 784};
  const int64_t ms[] = {1, 2, 5};
  int cases = 0;
  for (BlockShape prune_shape : kPruneShapes)
    for (BlockShape s : kBlockShapes)
      for (double sp : kSparsities)
        for (int64_t N : out_counts)
          for (int64_t K : in_counts)
            for (int64_t M : ms) {
              if ((N + K + M + cases) % 2) continue;
              ++cases;
              auto w = random_vec(N * K, rng);
              prune_blocks(w.data(), N, K, prune_shape, sp);
              const int64_t ldx = K + 1, ldy = N + 3;
              auto x = random_vec(M * ldx, rng);
              auto bias = random_vec(N, rng);
              const bool use_bias = cases % 2 == 1;
              const float beta = cases % 3 == 0 ? 1.0f : 0.0f;
              auto y0 = random_vec(M * ldy, rng);
              std::vector<float> want = y0;
              for (int64_t mm = 0; mm < M; ++mm)
                for (int64_t n = 0; n < N; ++n) {
                  double acc = use_bias ? bias[n] : 0.0;
                  for (int64_t k = 0; k < K; ++k) acc += double(w[n * K + k]) * x[mm * ldx + k];
                  want[mm * ldy + n] = float(acc + beta * y0[mm * ldy + n]);
                }
              // Weights given as [K, N] (MatMul's B) must pack to the same matrix.
              std::vector<float> wt(K * N);
              for (int64_t n = 0; n < N; ++n)
                for (int64_t k = 0; k < K; ++k) wt[k * N + n] = w[n * K + k];
              SparseMatrix m = cases % 2 ? pack(w.data(), N, K, K, s)
                                         : pack_transposed(wt.data(), N, K, N, s);
              RowsArgs a{x.data(), ldx, 0, M, use_bias ? bias.data() : nullptr, beta, nullptr, ldy};
              // Y before the call: y0, with NaN in the outputs when beta 0 must overwrite.
              auto fresh_y = [&] {
                std::vector<float> y = y0;
                if (beta == 0.0f)
                  for (int64_t mm = 0; mm < M; ++mm)
                    for (int64_t n = 0; n < N; ++n) y[mm * ldy + n] = kNaN;
                return y;
              };
              std::vector<float> got_ref = fresh_y(), got = fresh_y();
              a.y = got_ref.data();
              rows_ref(m, a, 0, m.block_rows());
              a.y = got.data();
              const int64_t third = m.block_rows() / 3;
              rows(m, a, 0, third);
              rows(m, a, third, m.block_rows());
              const std::string what = "rows " + s.str() + " pruned " + prune_shape.str() +
                                       " sp " + std::to_string(sp) + " N" + std::to_string(N) +
                                       " K" + std::to_string(K) + " M" + std::to_string(M);
              expect_close(got_ref, want, what + " (ref)");
              expect_close(got, want, what + " (simd)");
              // The same matrix with row panels (CSR and 1x4): units are panels now.
              add_row_panels(&m);
              if (s != BlockShape{1, 1} && s != BlockShape{1, 4}) {
                CHECK(m.panels() == 0);
                continue;
              }
              REQUIRE(m.panels() == (N + SparseMatrix::kPanel - 1) / SparseMatrix::kPanel);
              std::vector<float> got_pref = fresh_y(), got_p = fresh_y();
              a.y = got_pref.data();
              rows_panels_ref(m, a, 0, m.panels());
              a.y = got_p.data();
              const int64_t half = rows_units(m) / 2;
              rows(m, a, 0, half);
              rows(m, a, half, rows_units(m));
              expect_close(got_pref, want, what + " (panels ref)");
              expect_close(got_p, want, what + " (panels simd)");
            }
  CHECK(cases > 200);
}

TEST_CASE("the pruning helper reaches the sparsity asked for") {
  std::mt19937 rng(3);
  for (BlockShape s : kPruneShapes)
    for (double sp : kSparsities) {
      auto w = random_vec(64 * 96, rng);
      prune_blocks(w.data(), 64, 96, s, sp);
      CHECK(block_sparsity(w.data(), 64, 96, s) == doctest::Approx(sp).epsilon(0.02));
    }
}
