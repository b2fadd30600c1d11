#include "sparse_matrix.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace minnow {
namespace cpu_sparse {

const BlockShape kBlockShapes[4] = {{1, 1}, {1, 4}, {4, 1}, {1, 8}};

std::string BlockShape::str() const { return std::to_string(r) + "x" + std::to_string(c); }

namespace {

// Element (n, k) of W, through either storage order; zero in the padded rows.
struct Reader {
  const float* w;
  int64_t rows, ld;
  bool transposed;
  float at(int64_t n, int64_t k) const {
    if (n >= rows) return 0.0f;
    return transposed ? w[k * ld + n] : w[n * ld + k];
  }
};

bool block_nonzero(const Reader& rd, int64_t n0, int64_t k0, BlockShape s) {
  for (int r = 0; r < s.r; ++r)
    for (int c = 0; c < s.c; ++c)
      if (rd.at(n0 + r, k0 + c) != 0.0f) return true;
  return false;
}

SparseMatrix pack_impl(const Reader& rd, int64_t rows, int64_t cols, BlockShape s, float scale) {
  if (s.r < 1 || s.c < 1) throw std::invalid_argument("block shape " + s.str() + " is invalid");
  if (!shape_fits(s, rows, cols))
    throw std::invalid_argument("block shape " + s.str() + " does not divide " +
                                std::to_string(cols) + " columns");
  // Indices are int32 (half the memory traffic of int64 in the inner loops).
  if (rows * cols > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("weight matrix of " + std::to_string(rows) + "x" +
                                std::to_string(cols) + " is too big for 32-bit indices");
  SparseMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.shape = s;
  const int64_t brows = m.block_rows();
  m.row_ptr.reserve(static_cast<size_t>(brows + 1));
  m.row_ptr.push_back(0);
  for (int64_t br = 0; br < brows; ++br) {
    const int64_t n0 = br * s.r;
    for (int64_t k0 = 0; k0 < cols; k0 += s.c) {
      if (!block_nonzero(rd, n0, k0, s)) continue;
      m.col.push_back(static_cast<int32_t>(k0));
      for (int r = 0; r < s.r; ++r)
        for (int c = 0; c < s.c; ++c) m.values.push_back(scale * rd.at(n0 + r, k0 + c));
    }
    m.row_ptr.push_back(static_cast<int32_t>(m.col.size()));
  }
  return m;
}

}  // namespace

double block_sparsity(const float* w, int64_t rows, int64_t cols, BlockShape s,
                      bool transposed) {
  if (!shape_fits(s, rows, cols) || rows <= 0 || cols <= 0) return 0.0;
  const Reader rd{w, rows, transposed ? rows : cols, transposed};
  const int64_t brows = (rows + s.r - 1) / s.r, bcols = cols / s.c;
  int64_t zero = 0;
  for (int64_t br = 0; br < brows; ++br)
    for (int64_t bc = 0; bc < bcols; ++bc)
      if (!block_nonzero(rd, br * s.r, bc * s.c, s)) ++zero;
  return static_cast<double>(zero) / static_cast<double>(brows * bcols);
}

SparseMatrix pack(const float* w, int64_t rows, int64_t cols, int64_t ld, BlockShape s,
                  float scale) {
  return pack_impl(Reader{w, rows, ld, false}, rows, cols, s, scale);
}

SparseMatrix pack_transposed(const float* w, int64_t rows, int64_t cols, int64_t ld,
                             BlockShape s, float scale) {
  return pack_impl(Reader{w, rows, ld, true}, rows, cols, s, scale);
}

void add_row_panels(SparseMatrix* m) {
  if ((m->shape != BlockShape{1, 1} && m->shape != BlockShape{1, 4}) || m->rows <= 0 ||
      m->cols > SparseMatrix::kMaxPanelCols)
    return;
  constexpr int P = SparseMatrix::kPanel;
  const int C = m->shape.c;
  const int64_t rows = m->rows, panels = (rows + P - 1) / P;
  auto nnz = [&](int64_t n) { return m->row_ptr[n + 1] - m->row_ptr[n]; };
  // Longest rows first: rows of one panel then have similar counts, so little padding.
  std::vector<int32_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return nnz(a) > nnz(b); });
  m->panel_ptr.assign(1, 0);
  m->panel_row.assign(static_cast<size_t>(panels * P), -1);
  m->panel_val.clear();
  m->panel_col.clear();
  for (int64_t p = 0; p < panels; ++p) {
    int32_t steps = 0;
    for (int r = 0; r < P && p * P + r < rows; ++r) {
      const int32_t n = order[static_cast<size_t>(p * P + r)];
      m->panel_row[static_cast<size_t>(p * P + r)] = n;
      steps = std::max(steps, nnz(n));
    }
    const size_t base = m->panel_col.size();
    m->panel_val.resize((base + static_cast<size_t>(steps) * P) * C, 0.0f);
    m->panel_col.resize(base + static_cast<size_t>(steps) * P, 0);
    for (int r = 0; r < P; ++r) {
      const int32_t n = m->panel_row[static_cast<size_t>(p * P + r)];
      if (n < 0) continue;
      for (int32_t t = 0; t < nnz(n); ++t) {
        const size_t slot = base + static_cast<size_t>(t) * P + r;
        const int32_t b = m->row_ptr[n] + t;
        for (int c = 0; c < C; ++c)
          m->panel_val[slot * C + c] = m->values[static_cast<size_t>(b) * C + c];
        m->panel_col[slot] = static_cast<uint16_t>(m->col[b]);
      }
    }
    m->panel_ptr.push_back(m->panel_ptr.back() + steps);
  }
  m->tiled = false;
  m->tile_xoff.clear();
  m->tile_pairs.clear();
}

namespace {

// W below is the tile width: the x values one tiled step can reach (one vector of 8 or 16
// floats), which is also the row slots of a panel.
bool tiles_fit(const SparseMatrix& m, int W) {
  const bool csr = m.shape == BlockShape{1, 1};
  return (W == 8 || W == 16) && (csr || m.shape == BlockShape{1, 4}) && m.rows > 0 && m.cols >= W &&
         m.cols <= (csr ? SparseMatrix::kMaxPanelCols : SparseMatrix::kMaxInterleavedCols);
}

// The CSR matrix the tiles of a 1xC matrix (C > 1) are built from
// (SparseMatrix::tile_interleave): its nonzeros, column k moved to (k % C) * (cols / C) +
// k / C; zeros inside kept blocks dropped. CSR matrices are tiled as they are.
SparseMatrix tile_source(const SparseMatrix& m) {
  const int C = m.shape.c;
  const int64_t part = m.cols / C;
  SparseMatrix v;
  v.rows = m.rows;
  v.cols = m.cols;
  v.row_ptr.assign(1, 0);
  std::vector<std::pair<int32_t, float>> row;
  for (int64_t n = 0; n < m.rows; ++n) {
    row.clear();
    for (int32_t b = m.row_ptr[n]; b < m.row_ptr[n + 1]; ++b)
      for (int e = 0; e < C; ++e) {
        const float x = m.values[static_cast<size_t>(b) * C + e];
        if (x != 0.0f) row.emplace_back(static_cast<int32_t>(e * part + m.col[b] / C), x);
      }
    std::sort(row.begin(), row.end());
    for (const auto& [k, x] : row) {
      v.col.push_back(k);
      v.values.push_back(x);
    }
    v.row_ptr.push_back(static_cast<int32_t>(v.col.size()));
  }
  return v;
}

// The rows of each tiled panel (W slots per panel, -1 for padding). A panel takes as
// many steps in a window as its fullest row has nonzeros there, so rows whose nonzeros
// fall in the same (aligned) windows belong together: greedily, a panel starts from the
// longest row left and takes, W - 1 times, the row (among the next kTilePool longest) that
// adds the fewest steps. At 90 % random sparsity that saves 8-24 % of the steps over rows in order
// (mlp 300-100, lstm gates 512x128); structured patterns gain more.
constexpr int64_t kTilePool = 128;
std::vector<int32_t> tile_row_order(const SparseMatrix& m, int W) {
  const int P = W;
  const int64_t rows = m.rows, windows = (m.cols + W - 1) / W;
  const int64_t panels = (rows + P - 1) / P;
  std::vector<uint8_t> cnt(static_cast<size_t>(rows * windows), 0);  // nonzeros per (row, window) <= W
  for (int64_t n = 0; n < rows; ++n)
    for (int32_t b = m.row_ptr[n]; b < m.row_ptr[n + 1]; ++b)
      ++cnt[static_cast<size_t>(n * windows + m.col[b] / W)];
  std::vector<int32_t> left(static_cast<size_t>(rows));
  std::iota(left.begin(), left.end(), 0);
  std::stable_sort(left.begin(), left.end(), [&](int32_t x, int32_t y) {
    return m.row_ptr[x + 1] - m.row_ptr[x] > m.row_ptr[y + 1] - m.row_ptr[y];
  });
  std::vector<int32_t> order(static_cast<size_t>(panels * P), -1);
  std::vector<uint8_t> most(static_cast<size_t>(windows));
  size_t head = 0;  // left[head..) are the rows not placed yet, longest first
  for (int64_t p = 0; p < panels; ++p) {
    const int32_t seed = left[head++];
    order[static_cast<size_t>(p * P)] = seed;
    std::copy_n(cnt.begin() + seed * windows, windows, most.begin());
    for (int r = 1; r < P && head < left.size(); ++r) {
      size_t best = head;
      int64_t best_add = -1;
      const size_t end = std::min(left.size(), head + static_cast<size_t>(kTilePool));
      for (size_t i = head; i < end; ++i) {
        const uint8_t* c = cnt.data() + left[i] * windows;
        int64_t add = 0;
        for (int64_t w = 0; w < windows; ++w) add += c[w] > most[static_cast<size_t>(w)] ? c[w] - most[static_cast<size_t>(w)] : 0;
        if (best_add < 0 || add < best_add) best_add = add, best = i;
        if (add == 0) break;
      }
      const int32_t n = left[best];
      std::rotate(left.begin() + static_cast<std::ptrdiff_t>(head), left.begin() + static_cast<std::ptrdiff_t>(best),
                  left.begin() + static_cast<std::ptrdiff_t>(best) + 1);  // keeps the rest in order
      ++head;
      order[static_cast<size_t>(p * P + r)] = n;
      const uint8_t* c = cnt.data() + n * windows;
      for (int64_t w = 0; w < windows; ++w) most[static_cast<size_t>(w)] = std::max(most[static_cast<size_t>(w)], c[w]);
    }
  }
  return order;
}

// Where a window may start for the columns [j, ...): its vector load must stay inside x.
int64_t window_load_start(int64_t j, int64_t cols, int W) { return std::min<int64_t>(j, cols - W); }

// Calls f(panel, j, i, steps) for the segments [j, i) of at most W columns that a panel's
// steps read x in, in order, skipping empty ones; steps = the most nonzeros one row of the
// panel (rows per `order`) has in the segment. The segments are chosen per panel, not
// aligned to multiples of W: a dynamic programme over the columns finds the cut with the
// least cost, a step in a pair counting 4 and a single one 5 (the pairs' shared x load).
// Against aligned windows that is 6-13 % fewer steps at 90 % random sparsity (mlp and
// lstm fc layers).
template <class F>
void for_each_tile(const SparseMatrix& m, const std::vector<int32_t>& order, int W, F f) {
  const int P = W;
  const int64_t K = m.cols, panels = (m.rows + P - 1) / P;
  const size_t stride = static_cast<size_t>(K + 1);
  std::vector<int32_t> cs(static_cast<size_t>(P) * stride);  // per row slot: nonzeros before column k
  std::vector<int64_t> best(stride);
  std::vector<int32_t> cut(stride), most(stride);
  auto cost = [](int32_t c) { return int64_t(4) * (c & ~1) + int64_t(5) * (c & 1); };
  for (int64_t p = 0; p < panels; ++p) {
    std::fill(cs.begin(), cs.end(), 0);
    for (int r = 0; r < P; ++r) {
      const int32_t n = order[static_cast<size_t>(p * P + r)];
      if (n < 0) continue;
      int32_t* c = cs.data() + static_cast<size_t>(r) * stride;
      for (int32_t b = m.row_ptr[n]; b < m.row_ptr[n + 1]; ++b) ++c[m.col[b] + 1];
      for (int64_t k = 1; k <= K; ++k) c[k] += c[k - 1];
    }
    best[0] = 0;
    for (int64_t i = 1; i <= K; ++i) {
      best[static_cast<size_t>(i)] = -1;
      for (int64_t j = i - 1; j >= std::max<int64_t>(0, i - W); --j) {
        int32_t c = 0;
        for (int r = 0; r < P; ++r) {
          const int32_t* row = cs.data() + static_cast<size_t>(r) * stride;
          c = std::max(c, row[i] - row[j]);
        }
        const int64_t v = best[static_cast<size_t>(j)] + cost(c);
        if (best[static_cast<size_t>(i)] < 0 || v < best[static_cast<size_t>(i)]) {
          best[static_cast<size_t>(i)] = v;
          cut[static_cast<size_t>(i)] = static_cast<int32_t>(j);
          most[static_cast<size_t>(i)] = c;
        }
      }
    }
    std::vector<int64_t> ends;  // the cut's segment ends, backwards from K
    for (int64_t i = K; i > 0; i = cut[static_cast<size_t>(i)])
      if (most[static_cast<size_t>(i)] > 0) ends.push_back(i);
    for (auto it = ends.rbegin(); it != ends.rend(); ++it)
      f(p, int64_t(cut[static_cast<size_t>(*it)]), *it, most[static_cast<size_t>(*it)]);
  }
}

// The float nearest v whose log2(W) lowest mantissa bits are `lane` (SparseMatrix::tiled):
// one of the three candidates W units in the last place apart around v, same sign.
float with_lane(float v, int lane, int W) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const uint32_t mag = bits & 0x7fffffffu, sign = bits & 0x80000000u, w = static_cast<uint32_t>(W);
  uint32_t best = (mag & ~(w - 1)) | static_cast<uint32_t>(lane);
  auto dist = [&](uint32_t c) { return c > mag ? c - mag : mag - c; };
  if (best >= w && dist(best - w) < dist(best)) best -= w;
  if (best + w < 0x7f800000u && dist(best + w) < dist(best)) best += w;  // stay finite
  bits = sign | best;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

}  // namespace

int64_t row_panel_steps(const SparseMatrix& m) {
  if (m.rows <= 0 || m.shape.r != 1) return 0;
  constexpr int P = SparseMatrix::kPanel;
  std::vector<int32_t> nnz(static_cast<size_t>(m.rows));
  for (int64_t n = 0; n < m.rows; ++n) nnz[static_cast<size_t>(n)] = m.row_ptr[n + 1] - m.row_ptr[n];
  std::sort(nnz.begin(), nnz.end(), std::greater<int32_t>());
  int64_t steps = 0;
  for (size_t i = 0; i < nnz.size(); i += P) steps += nnz[i];  // a panel's longest row
  return steps;
}

int64_t row_tile_steps(const SparseMatrix& m, int width) {
  if (!tiles_fit(m, width)) return 0;
  const SparseMatrix v = m.shape.c == 1 ? SparseMatrix() : tile_source(m);
  const SparseMatrix& src = m.shape.c == 1 ? m : v;
  int64_t steps = 0;
  for_each_tile(src, tile_row_order(src, width), width, [&](int64_t, int64_t, int64_t, int32_t s) { steps += s; });
  return steps;
}

namespace {

// The tiled panels of CSR matrix m (add_row_tiles).
void build_tiles(SparseMatrix* m, int width) {
  const int P = width;
  const int64_t panels = (m->rows + P - 1) / P;
  m->panel_row = tile_row_order(*m, P);
  m->panel_col.clear();
  // One panel's steps, built window by window, then appended pairs first.
  struct Step {
    uint16_t x0;
    float v[16];  // the first P used
  };
  std::vector<Step> steps, pairs, singles;
  std::vector<int32_t> next(P);  // per row slot: its next nonzero not placed yet
  m->panel_ptr.assign(1, 0);
  m->panel_val.clear();
  m->tile_xoff.clear();
  m->tile_pairs.assign(static_cast<size_t>(panels), 0);
  int64_t cur = -1;
  // Appends panel `cur`'s steps and closes every panel before `upto` (empty ones too).
  auto flush = [&](int64_t upto) {
    if (cur >= 0) {
      m->tile_pairs[static_cast<size_t>(cur)] = static_cast<int32_t>(pairs.size());
      for (const auto* run : {&pairs, &singles})
        for (const Step& st : *run) {
          m->tile_xoff.push_back(st.x0);
          m->panel_val.insert(m->panel_val.end(), st.v, st.v + P);
        }
      pairs.clear();
      singles.clear();
    }
    while (static_cast<int64_t>(m->panel_ptr.size()) <= upto)
      m->panel_ptr.push_back(static_cast<int32_t>(m->tile_xoff.size()));
  };
  for_each_tile(*m, m->panel_row, P, [&](int64_t p, int64_t j, int64_t i, int32_t count) {
    if (p != cur) {
      flush(p);
      for (int r = 0; r < P; ++r) {
        const int32_t n = m->panel_row[static_cast<size_t>(p * P + r)];
        next[static_cast<size_t>(r)] = n >= 0 ? m->row_ptr[n] : 0;
      }
      cur = p;
    }
    const int64_t x0 = window_load_start(j, m->cols, P);
    steps.assign(static_cast<size_t>(count), Step{static_cast<uint16_t>(x0), {}});
    for (int r = 0; r < P; ++r) {
      const int32_t n = m->panel_row[static_cast<size_t>(p * P + r)];
      if (n < 0) continue;
      int32_t& b = next[static_cast<size_t>(r)];
      for (int32_t t = 0; b < m->row_ptr[n + 1] && m->col[b] < i; ++b, ++t)
        steps[static_cast<size_t>(t)].v[r] = with_lane(m->values[static_cast<size_t>(b)], static_cast<int>(m->col[b] - x0), P);
    }
    const size_t even = steps.size() & ~size_t(1);
    pairs.insert(pairs.end(), steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(even));
    singles.insert(singles.end(), steps.begin() + static_cast<std::ptrdiff_t>(even), steps.end());
  });
  flush(panels);
  m->tiled = true;
  m->tile_width = P;
}

}  // namespace

void add_row_tiles(SparseMatrix* m, int width) {
  if (!tiles_fit(*m, width)) return;
  if (m->shape.c == 1) {
    build_tiles(m, width);
    m->tile_interleave = 1;
    return;
  }
  SparseMatrix v = tile_source(*m);
  build_tiles(&v, width);
  m->panel_ptr = std::move(v.panel_ptr);
  m->panel_row = std::move(v.panel_row);
  m->panel_val = std::move(v.panel_val);
  m->panel_col.clear();
  m->tile_xoff = std::move(v.tile_xoff);
  m->tile_pairs = std::move(v.tile_pairs);
  m->tiled = true;
  m->tile_width = width;
  m->tile_interleave = m->shape.c;
}

void deinterleave_x(const float* x, int64_t cols, int c, float* out) {
  const int64_t part = cols / c;
  for (int e = 0; e < c; ++e)
    for (int64_t j = 0; j < part; ++j) out[e * part + j] = x[j * c + e];
}

void add_rows_layout(SparseMatrix* m, int tile_width) {
  if (tiles_fit(*m, tile_width)) {
    // Built once on a copy (row grouping and the window programme are the costly part of
    // preparing a tiled matrix) and kept if its steps cost less than the row panels'.
    SparseMatrix tiled = *m;
    add_row_tiles(&tiled, tile_width);
    const double panel_cost = m->shape.c == 1 ? kPanelStepCost : kPanel4StepCost;
    if (tile_step_cost(tile_width) * static_cast<double>(tiled.tile_xoff.size()) <
        panel_cost * static_cast<double>(row_panel_steps(*m))) {
      *m = std::move(tiled);
      return;
    }
  }
  add_row_panels(m);
}

}  // namespace cpu_sparse
}  // namespace minnow
