// Channel selection and least-squares re-fit of the consumer layer (He et al. 2017,
// "Channel Pruning for Accelerating Very Deep Neural Networks", with the LASSO step
// replaced by greedy backward elimination).
//
// The consumer's output (before its bias) is Y = X W^T, X the rows of its input (one
// row per sampled output position: the im2col patch for a Conv, the whole input vector
// for a Gemm/MatMul), columns grouped by input channel (`group` columns each). Given the
// ORIGINAL model's Y on calibration data and the CURRENT (already pruned upstream)
// model's X, channels are removed one at a time, each time the one whose removal raises
// the least-squares residual ||Y - X_S W_S^T - 1 d^T|| the least once W_S (and the bias
// correction d) are re-fitted; then W_S and d are the re-fitted least-squares solution.
// Removing a channel that is constant (after ReLU of a dead filter), zero, or a linear
// combination of others therefore costs nothing.
#pragma once

#include "../compress_common/train_graph.h"

#include <minnow/ir.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace minnow {
namespace compress {
namespace channels {


struct FitResult {
  std::vector<int64_t> keep;        // kept channels, ascending
  std::vector<float> weight;        // [outputs, keep.size() * group]
  std::vector<float> bias_delta;    // [outputs]: added to the consumer's bias (zeros without intercept)
  double rel_err_before = 0;        // ||Y - X W^T||^2 / ||Y||^2 with every channel (upstream drift)
  double rel_err_after = 0;         // the same after removal and re-fit
};

struct FitOptions {
  int64_t remove = 0;    // channels to remove
  bool intercept = true; // fit a bias correction
  bool refit = true;     // false: only select; kept columns stay as they were
  double ridge = 1e-7;   // Tikhonov term, relative to the mean diagonal of X^T X
};

// X: [rows, channels * group]; Y: [rows, outputs]; W: [outputs, channels * group].
FitResult select_and_refit(const std::vector<float>& X, const std::vector<float>& Y, const std::vector<float>& W,
                           int64_t rows, int64_t channels, int64_t group, int64_t outputs, const FitOptions& opt);

// Joint selection for a channel group with several consumers (residual branches, an
// activation read twice): the same backward elimination, each step removing the channel
// whose removal raises the SUM over consumers of the relative residual
// ||Y_k - X_k,S W^T||^2 / ||Y_k||^2 the least (relative, so that a consumer with large
// activations does not outvote the others). One consumer gives the same choice as
// select_and_refit. Returns the kept channels, ascending.
struct LsProblem {
  const std::vector<float>* X = nullptr;  // [rows, channels * group]
  const std::vector<float>* Y = nullptr;  // [rows, outputs]
  int64_t rows = 0, group = 1, outputs = 0;
  bool intercept = true;
};
std::vector<int64_t> select_joint(const std::vector<LsProblem>& problems, int64_t channels, int64_t remove,
                                  double ridge);

// Rows of the consumer's input: for a Conv, the im2col patch at each sampled output
// position (n, oy, ox); for a Gemm/MatMul, the input rows themselves (positions ignored).
using Position = std::array<int64_t, 3>;
std::vector<Position> sample_positions(const ir::Node& consumer, const Value& x, int64_t weight_h, int64_t weight_w,
                                       int64_t rows_wanted, std::mt19937_64& rng);
std::vector<float> input_rows(const ir::Node& consumer, const Value& x, int64_t weight_h, int64_t weight_w,
                              const std::vector<Position>& pos, int64_t* rows);

}  // namespace channels
}  // namespace compress
}  // namespace minnow
