// Magnitude pruning, for tests and benches (the compression toolchain has its own
// transform): zeroes the R x C blocks of W with the smallest L1 norm until `sparsity` of
// all blocks are zero. Deterministic. Requires cols % s.c == 0.
#pragma once

#include "sparse_matrix.h"

namespace minnow {
namespace cpu_sparse {

void prune_blocks(float* w, int64_t rows, int64_t cols, BlockShape s, double sparsity);

}  // namespace cpu_sparse
}  // namespace minnow
