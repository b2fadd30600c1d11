// Per-layer sparsity from measured sensitivity: given, for each prunable layer, the cost
// (loss increase) of pruning it alone to each of a few sparsity levels, choose one sparsity
// per layer so that the whole set reaches a target sparsity (in weights) at the least
// summed cost. Greedy on the cost per weight removed, over every jump a layer can make
// (so a layer whose cost is flat after a steep step is still found), the last jump
// interpolated so the total lands on the target exactly. Costs are treated as additive
// across layers, which they are not quite; distillation repairs the rest. Used by
// distill's allocate=sensitivity; kept apart so it is tested without training.
#pragma once

#include <cstdint>
#include <vector>

namespace minnow {
namespace compress {

struct SensitivityCurve {
  int64_t size = 0;             // weights in the layer
  double start = 0;             // sparsity it comes in with (its zeros are kept)
  std::vector<double> levels;   // measured sparsities, ascending, each > start
  std::vector<double> cost;     // loss increase when pruned alone to levels[j] (>= 0 used)
};

// One sparsity per curve, each in [start, last level]; the size-weighted mean equals
// `target` where the levels allow it (else every layer ends at its last level), or less
// where the summed cost would pass `max_cost` first: the allocation then stops where the
// cost reaches it (costs interpolated linearly within a jump). `cost` (if given) receives
// the summed cost of the allocation.
std::vector<double> allocate_sparsity(const std::vector<SensitivityCurve>& curves, double target,
                                      double max_cost = -1, double* cost = nullptr);

}  // namespace compress
}  // namespace minnow
