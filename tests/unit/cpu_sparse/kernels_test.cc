// The sparse kernels (reference and SIMD) against a dense matrix product, over odd shapes,
// every block shape, sparsity from 0 to 99 %, with and without bias and beta.
// Built for the host and, by scripts/arm64/test_kernels.sh, for aarch64 under qemu.
#include <doctest/doctest.h>

#include "kernels.h"
#include "prune.h"

#include <algorithm>
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

// The clamp a case applies (a fused Relu / Clip), drawn at random per case (not from the
// case number, which the grid filters tie to the shapes): none, Relu, or a Clip narrow
// enough to cut many outputs.
struct Clamp {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  float operator()(double v) const { return float(std::min<double>(hi, std::max<double>(lo, v))); }
};
Clamp clamp_for(int c) {
  if (c % 4 == 1) return {0.0f, std::numeric_limits<float>::infinity()};
  if (c % 4 == 3) return {-0.3f, 0.4f};
  return {};
}

// The rows form's expected result, in double: Y[m, n] = clamp(bias[n] + W[n, :] . X[m, :] + beta * Y0).
std::vector<float> rows_want(const std::vector<float>& w, const std::vector<float>& x, const float* bias,
                             const std::vector<float>& y0, int64_t M, int64_t N, int64_t K, int64_t ldx,
                             int64_t ldy, float beta, Clamp clamp = {}) {
  std::vector<float> want = y0;
  for (int64_t mm = 0; mm < M; ++mm)
    for (int64_t n = 0; n < N; ++n) {
      double acc = bias ? bias[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += double(w[n * K + k]) * x[mm * ldx + k];
      want[mm * ldy + n] = clamp(acc + beta * y0[mm * ldy + n]);
    }
  return want;
}

// Y before a rows() call: y0, with NaN in the outputs when beta 0 must overwrite them.
std::vector<float> rows_fresh_y(const std::vector<float>& y0, int64_t M, int64_t N, int64_t ldy, float beta) {
  std::vector<float> y = y0;
  if (beta == 0.0f)
    for (int64_t mm = 0; mm < M; ++mm)
      for (int64_t n = 0; n < N; ++n) y[mm * ldy + n] = kNaN;
  return y;
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
  std::mt19937 pick(5);
  int cases = 0;
  for (BlockShape prune_shape : kPruneShapes)
    for (BlockShape s : kBlockShapes)
      for (double sp : kSparsities)
        for (int64_t N : row_counts)
          for (int64_t K : col_counts)
            for (int64_t J : js) {
              if (!shape_fits(prune_shape, N, K) || !shape_fits(s, N, K)) continue;
              // A third of the grid, drawn at random: a filter on the case number had kept
              // almost only the first columns of the list (J 1, 5, 7: no whole vector).
              if (pick() % 3) continue;
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
              const Clamp clamp = clamp_for(int(rng() % 4));
              std::vector<float> want = y0;
              for (int64_t n = 0; n < N; ++n)
                for (int64_t j = 0; j < J; ++j) {
                  double acc = use_bias ? bias[n] : 0.0;
                  for (int64_t k = 0; k < K; ++k) acc += double(w[n * K + k]) * x[k * ldx + j];
                  want[n * ldy + j] = clamp(acc + beta * y0[n * ldy + j]);
                }
              SparseMatrix m = pack(w.data(), N, K, K, s);
              SpmmArgs a{x.data(), ldx, J, use_bias ? bias.data() : nullptr, beta, nullptr, ldy};
              a.lo = clamp.lo;
              a.hi = clamp.hi;
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
  std::mt19937 pick(9);
  int cases = 0;
  for (BlockShape prune_shape : kPruneShapes)
    for (BlockShape s : kBlockShapes)
      for (double sp : kSparsities)
        for (int64_t N : out_counts)
          for (int64_t K : in_counts)
            for (int64_t M : ms) {
              if (pick() % 2) continue;  // half the grid, drawn at random (as the spmm test)
              ++cases;
              auto w = random_vec(N * K, rng);
              prune_blocks(w.data(), N, K, prune_shape, sp);
              const int64_t ldx = K + 1, ldy = N + 3;
              auto x = random_vec(M * ldx, rng);
              auto bias = random_vec(N, rng);
              const bool use_bias = cases % 2 == 1;
              const float beta = cases % 3 == 0 ? 1.0f : 0.0f;
              auto y0 = random_vec(M * ldy, rng);
              const Clamp clamp = clamp_for(int(rng() % 4));
              const std::vector<float> want =
                  rows_want(w, x, use_bias ? bias.data() : nullptr, y0, M, N, K, ldx, ldy, beta, clamp);
              // Weights given as [K, N] (MatMul's B) must pack to the same matrix.
              std::vector<float> wt(K * N);
              for (int64_t n = 0; n < N; ++n)
                for (int64_t k = 0; k < K; ++k) wt[k * N + n] = w[n * K + k];
              SparseMatrix m = cases % 2 ? pack(w.data(), N, K, K, s)
                                         : pack_transposed(wt.data(), N, K, N, s);
              RowsArgs a{x.data(), ldx, 0, M, use_bias ? bias.data() : nullptr, beta, nullptr, ldy};
              a.lo = clamp.lo;
              a.hi = clamp.hi;
              auto fresh_y = [&] { return rows_fresh_y(y0, M, N, ldy, beta); };
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

TEST_CASE("tiled row panels match the dense product on odd shapes") {
  std::mt19937 rng(11);
  const int64_t out_counts[] = {1, 7, 8, 9, 17, 100, 129};
  const int64_t in_counts[] = {8, 9, 13, 16, 17, 64, 300, 301};
  int cases = 0;
  for (int W : {8, 16})
  for (BlockShape prune_shape : kPruneShapes)
    for (double sp : kSparsities)
      for (int64_t N : out_counts)
        for (int64_t K : in_counts) {
          if (K % prune_shape.c) continue;
          const int64_t M = 1 + (N + K) % 3;
          ++cases;
          auto w = random_vec(N * K, rng);
          prune_blocks(w.data(), N, K, prune_shape, sp);
          const int64_t ldx = K + (cases % 2), ldy = N + 1;
          auto x = random_vec(M * ldx, rng);
          auto bias = random_vec(N, rng);
          const bool use_bias = cases % 2 == 0;
          const float beta = cases % 3 == 0 ? 1.0f : 0.0f;
          auto y0 = random_vec(M * ldy, rng);
          const Clamp clamp = clamp_for(int(rng() % 4));
          const std::vector<float> want =
              rows_want(w, x, use_bias ? bias.data() : nullptr, y0, M, N, K, ldx, ldy, beta, clamp);
          // Stored as CSR, or as 1x4 blocks (tiles over x de-interleaved by 4) when K allows.
          const BlockShape store = K % 4 == 0 && cases % 2 == 0 ? BlockShape{1, 4} : BlockShape{1, 1};
          SparseMatrix m = pack(w.data(), N, K, K, store);
          add_row_tiles(&m, W);
          if (K < W) {  // no window fits: the matrix keeps its plain layout
            CHECK_FALSE(m.tiled);
            CHECK(row_tile_steps(m, W) == 0);
            continue;
          }
          REQUIRE(m.tiled);
          REQUIRE(m.tile_width == W);
          REQUIRE(m.tile_interleave == store.c);
          REQUIRE(m.panels() == (N + W - 1) / W);
          CHECK(static_cast<int64_t>(m.tile_xoff.size()) == row_tile_steps(m, W));
          for (uint16_t x0 : m.tile_xoff) CHECK(x0 + W <= K);  // windows stay inside x
          // Every nonzero sits in one slot, at its row and (window + lane) column, its value
          // within W/2 units in the last place of the original; padding slots are exact zeros.
          int64_t placed = 0;
          bool slots_ok = true;
          for (int64_t p = 0; p < m.panels(); ++p)
            for (int32_t t = m.panel_ptr[p]; t < m.panel_ptr[p + 1]; ++t)
              for (int r = 0; r < W; ++r) {
                const float v = m.panel_val[size_t(t) * W + size_t(r)];
                if (v == 0.0f) continue;
                ++placed;
                const int64_t n = m.panel_row[size_t(p * W + r)], q = m.tile_xoff[t] + SparseMatrix::tile_lane(v, W);
                const int64_t k = (q % (K / store.c)) * store.c + q / (K / store.c);  // before de-interleaving
                const float orig = n >= 0 && n < N && k < K ? w[n * K + k] : 0.0f;
                if (orig == 0.0f || std::fabs(v - orig) > 0.5f * W * std::fabs(orig) / 8388608.0f)
                  slots_ok = false;
              }
          CHECK(slots_ok);
          CHECK(placed == std::count_if(w.begin(), w.end(), [](float v) { return v != 0.0f; }));
          // Paired steps (the panel's first tile_pairs[p]) share their x window two by two.
          bool pairs_ok = m.tile_pairs.size() == size_t(m.panels());
          for (int64_t p = 0; pairs_ok && p < m.panels(); ++p) {
            const int32_t t0 = m.panel_ptr[p], np = m.tile_pairs[size_t(p)];
            pairs_ok = np % 2 == 0 && np <= m.panel_ptr[p + 1] - t0;
            for (int32_t t = t0; pairs_ok && t < t0 + np; t += 2) pairs_ok = m.tile_xoff[t] == m.tile_xoff[t + 1];
          }
          CHECK(pairs_ok);
          std::vector<int32_t> slots = m.panel_row;  // every row in exactly one slot
          std::sort(slots.begin(), slots.end());
          slots.erase(std::remove(slots.begin(), slots.end(), -1), slots.end());
          CHECK(slots.size() == size_t(N));
          for (size_t i = 0; i < slots.size(); ++i) CHECK(slots[i] == int32_t(i));
          RowsArgs a{x.data(), ldx, 0, M, use_bias ? bias.data() : nullptr, beta, nullptr, ldy};
          a.lo = clamp.lo;
          a.hi = clamp.hi;
          auto fresh_y = [&] { return rows_fresh_y(y0, M, N, ldy, beta); };
          std::vector<float> got_ref = fresh_y(), got = fresh_y();
          a.y = got_ref.data();
          rows_panels_ref(m, a, 0, m.panels());
          a.y = got.data();
          const int64_t third = m.panels() / 3;
          rows(m, a, 0, third);
          rows(m, a, third, m.panels());
          const std::string what = "tiles" + std::to_string(W) + " of " + store.str() + " pruned " + prune_shape.str() + " sp " + std::to_string(sp) +
                                   " N" + std::to_string(N) + " K" + std::to_string(K) +
                                   " M" + std::to_string(M);
          expect_close(got_ref, want, what + " (ref)");
          expect_close(got, want, what + " (simd)");
          // The layout choice keeps CSR panels where they cost less, and never tiles on a
          // target without the tiled kernel.
          SparseMatrix c = pack(w.data(), N, K, K, store);
          add_rows_layout(&c, 0);
          CHECK_FALSE(c.tiled);
          add_rows_layout(&c, W);
          CHECK(c.tiled == (tile_step_cost(W) * double(row_tile_steps(c, W)) <
                            (store.c == 1 ? kPanelStepCost : kPanel4StepCost) * double(row_panel_steps(c))));
          if (c.tiled) CHECK(c.tile_width == W);
        }
  CHECK(cases > 600);
  // The panel storage the tiled kernels load whole steps from starts on a cache line.
  auto w = random_vec(40 * 64, rng);
  SparseMatrix m = pack(w.data(), 40, 64, 64, BlockShape{1, 1});
  add_row_tiles(&m, 16);
  REQUIRE(m.tiled);
  CHECK(reinterpret_cast<uintptr_t>(m.panel_val.data()) % 64 == 0);
  // Widths without a kernel are not built.
  SparseMatrix o = pack(w.data(), 40, 64, 64, BlockShape{1, 1});
  add_row_tiles(&o, 4);
  CHECK_FALSE(o.tiled);
  // 1x4 tiles need x reordered on the stack: not for more than kMaxInterleavedCols columns.
  const int64_t wide = SparseMatrix::kMaxInterleavedCols + 4;
  auto ww = random_vec(3 * wide, rng);
  SparseMatrix big = pack(ww.data(), 3, wide, wide, BlockShape{1, 4});
  add_row_tiles(&big, 16);
  CHECK_FALSE(big.tiled);
  SparseMatrix fits = pack(ww.data(), 3, wide - 4, wide, BlockShape{1, 4});
  add_row_tiles(&fits, 16);
  CHECK(fits.tiled);
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
