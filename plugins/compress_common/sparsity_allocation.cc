#include "sparsity_allocation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace minnow {
namespace compress {

std::vector<double> allocate_sparsity(const std::vector<SensitivityCurve>& curves, double target, double max_cost,
                                      double* cost) {
  double spent = 0;
  const bool capped = max_cost >= 0;
  if (cost) *cost = 0;
  const size_t n = curves.size();
  std::vector<double> s(n);
  std::vector<int> at(n, -1);  // index of the level each layer stands at (-1: its start)
  double total = 0, removed = 0;
  for (size_t l = 0; l < n; ++l) {
    const SensitivityCurve& c = curves[l];
    if (c.levels.size() != c.cost.size()) throw std::invalid_argument("allocate_sparsity: levels and costs differ in count");
    s[l] = c.start;
    total += double(c.size);
    removed += c.start * double(c.size);
  }
  const double want = target * total;
  auto cost_at = [&](size_t l, int j) { return j < 0 ? 0.0 : std::max(0.0, curves[l].cost[size_t(j)]); };
  auto level_at = [&](size_t l, int j) { return j < 0 ? curves[l].start : curves[l].levels[size_t(j)]; };
  while (removed < want - 0.5) {
    double best = std::numeric_limits<double>::infinity(), best_gain = 0;
    size_t bl = n;
    int bj = -1;
    for (size_t l = 0; l < n; ++l)
      for (int j = at[l] + 1; j < int(curves[l].levels.size()); ++j) {
        const double gain = (level_at(l, j) - level_at(l, at[l])) * double(curves[l].size);
        if (gain <= 0) continue;
        const double slope = std::max(0.0, cost_at(l, j) - cost_at(l, at[l])) / gain;
        if (slope < best || (slope == best && gain > best_gain)) {
          best = slope;
          best_gain = gain;
          bl = l;
          bj = j;
        }
      }
    if (bl == n) break;  // every layer at its last level
    const double step_cost = best * best_gain;
    double take = std::min(best_gain, want - removed);  // the last jump: only to the target
    if (capped && spent + best * take > max_cost) take = best > 0 ? (max_cost - spent) / best : take;
    if (take < best_gain) {  // a partial jump ends the allocation
      s[bl] = level_at(bl, at[bl]) + std::max(0.0, take) / double(curves[bl].size);
      spent += best * std::max(0.0, take);
      if (cost) *cost = spent;
      return s;
    }
    spent += step_cost;
    removed += best_gain;
    at[bl] = bj;
    s[bl] = level_at(bl, bj);
  }
  if (cost) *cost = spent;
  return s;
}

}  // namespace compress
}  // namespace minnow
