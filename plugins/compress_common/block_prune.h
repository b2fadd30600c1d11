// Block pruning: zeroes whole R x C blocks of a weight matrix (R outputs x C consecutive
// inputs, the shapes cpu_sparse runs: 1x1 = unstructured, 1x4, 4x1, 1x8), and the per-layer
// choice of block shape (`block=auto`). Shared by `prune` and by `distill`'s pruning while
// training, so both produce the same patterns.
//
// Blocks are taken in the kernels' orientation, W[outputs, inputs], whatever the storage
// order: a MatMul's or transB = 0 Gemm's B is stored [K, N], so a 1x4 block of the kernel
// (one output, four inputs) is four rows of one column there.
#pragma once

#include "ir_util.h"

#include <sparse_matrix.h>  // cpu_sparse::BlockShape
#include <thresholds.h>     // cpu_sparse::Kind, the measured speed of each shape

#include <cstdint>
#include <string>
#include <vector>

namespace minnow {
namespace compress {

using cpu_sparse::BlockShape;

// The kernels' view W[rows = outputs, cols = inputs] of a weight tensor's storage.
struct MatrixView {
  int64_t rows = 0, cols = 0;
  bool transposed = false;  // element (n, k) is stored at k * rows + n, else n * cols + k
  size_t at(int64_t n, int64_t k) const {
    return static_cast<size_t>(transposed ? k * rows + n : n * cols + k);
  }
};
MatrixView matrix_view(const WeightRef& r, const Shape& storage_shape);

// Which cpu_sparse kernel would run this weight (Conv 1x1 / other Conv / everything else).
cpu_sparse::Kind kernel_kind(const ir::ModelIR& m, const WeightRef& r);

// "1x1" (also "csr"), "1x4", "4x1", "1x8"; throws std::runtime_error naming `what`.
BlockShape parse_block_shape(const std::string& text, const std::string& what);
// The shape can tile the matrix: blocks never straddle the end of a row (cpu_sparse's rule).
bool block_fits(BlockShape s, const MatrixView& v);

// One tensor of a group being pruned. `free`, when given, is distill's trainable mask in
// storage order: pruned elements get 0 there.
struct BlockPruneItem {
  float* data = nullptr;
  MatrixView view;
  BlockShape shape;
  uint8_t* free = nullptr;
};

// Zeroes, across the whole group, the blocks of smallest mean square |w| (blocks already
// zero first; ties by position, so the result is deterministic) until at least `target`
// of the group's elements lie in zeroed blocks. Items of different shapes compete through
// the mean square, which does not depend on block size.
void prune_blocks_group(std::vector<BlockPruneItem>& items, double target);

// Fraction of the squared magnitude that pruning `data` alone to `sparsity` with shape `s`
// removes (the loss proxy of the shape choice). Does not modify `data`.
double removed_energy(const float* data, const MatrixView& v, BlockShape s, double sparsity);

// block=auto for one tensor at `sparsity`: the shape cpu_sparse is predicted to run fastest
// (its measured cost model) among those that remove at most `tolerance` times the squared
// magnitude unstructured pruning removes; 1x1 where no block shape qualifies or sparse
// never wins for the kernel kind. `why` gets a one-line reason for the report.
// The default tolerance: on the Fashion-MNIST mlp at 90 %, the block shapes removed
// 1.30-1.45x the squared magnitude unstructured pruning removes, and after distillation
// (2 epochs) cost 0.16-0.34 accuracy points more than CSR while running 1.5-2x faster than
// it (docs/COMPRESSION.md, "Block pruning"). 1.5 lets such shapes through.
constexpr double kDefaultBlockTolerance = 1.5;
BlockShape choose_block_shape(const float* data, const MatrixView& v, cpu_sparse::Kind kind,
                              double sparsity, double tolerance, std::string* why);

}  // namespace compress
}  // namespace minnow
