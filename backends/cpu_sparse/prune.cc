#include "prune.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace minnow {
namespace cpu_sparse {

void prune_blocks(float* w, int64_t rows, int64_t cols, BlockShape s, double sparsity) {
  if (!shape_fits(s, rows, cols))
    throw std::invalid_argument("prune: block shape " + s.str() + " does not divide " +
                                std::to_string(cols) + " columns");
  const int64_t brows = (rows + s.r - 1) / s.r, bcols = cols / s.c;
  const int64_t nblocks = brows * bcols;
  std::vector<double> norm(static_cast<size_t>(nblocks), 0.0);
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 0; k < cols; ++k)
      norm[(n / s.r) * bcols + k / s.c] += std::fabs(w[n * cols + k]);
  std::vector<int64_t> order(static_cast<size_t>(nblocks));
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal norms are pruned in storage order, so results are reproducible.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return norm[a] < norm[b]; });
  const int64_t drop = std::llround(std::clamp(sparsity, 0.0, 1.0) * static_cast<double>(nblocks));
  for (int64_t i = 0; i < drop; ++i) {
    const int64_t br = order[i] / bcols, bc = order[i] % bcols;
    for (int r = 0; r < s.r; ++r) {
      const int64_t n = br * s.r + r;
      if (n >= rows) break;
      for (int c = 0; c < s.c; ++c) w[n * cols + bc * s.c + c] = 0.0f;
    }
  }
}

}  // namespace cpu_sparse
}  // namespace minnow
