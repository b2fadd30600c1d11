#include "sparse_matrix.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

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
}

}  // namespace cpu_sparse
}  // namespace minnow
