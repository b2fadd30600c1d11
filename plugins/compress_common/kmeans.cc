#include "kmeans.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace minnow {
namespace compress {

KMeansResult kmeans_1d(const std::vector<float>& values, int k, int iterations) {
  KMeansResult r;
  const size_t n = values.size();
  if (n == 0 || k < 1) {
    r.centroids = {0.f};
    return r;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> sorted(n);
  for (size_t i = 0; i < n; ++i) sorted[i] = values[order[i]];
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + sorted[i];
  const double lo = sorted.front(), hi = sorted.back();
  std::vector<double> c(static_cast<size_t>(k));
  for (int j = 0; j < k; ++j) c[size_t(j)] = k == 1 ? (lo + hi) / 2 : lo + (hi - lo) * j / (k - 1);
  // On sorted data each cluster is a contiguous range: boundaries are midpoints.
  std::vector<size_t> start(static_cast<size_t>(k) + 1);
  for (int it = 0; it < iterations; ++it) {
    start[0] = 0;
    for (int j = 1; j < k; ++j) {
      double mid = (c[size_t(j - 1)] + c[size_t(j)]) / 2;
      start[size_t(j)] = size_t(std::upper_bound(sorted.begin(), sorted.end(), mid) - sorted.begin());
      start[size_t(j)] = std::max(start[size_t(j)], start[size_t(j - 1)]);
    }
    start[size_t(k)] = n;
    bool moved = false;
    for (int j = 0; j < k; ++j) {
      size_t a = start[size_t(j)], b = start[size_t(j) + 1];
      if (b > a) {
        double m = (prefix[b] - prefix[a]) / double(b - a);
        if (m != c[size_t(j)]) moved = true;
        c[size_t(j)] = m;
      }
    }
    if (!moved) break;
  }
  // Drop empty clusters (fewer distinct values than k), keep ascending order.
  std::vector<float> cent;
  for (int j = 0; j < k; ++j) cent.push_back(float(c[size_t(j)]));
  std::sort(cent.begin(), cent.end());
  cent.erase(std::unique(cent.begin(), cent.end()), cent.end());
  r.centroids = cent;
  r.assign.resize(n);
  for (size_t i = 0; i < n; ++i) {
    float v = values[i];
    size_t p = size_t(std::lower_bound(cent.begin(), cent.end(), v) - cent.begin());
    size_t best = p < cent.size() ? p : cent.size() - 1;
    if (p > 0 && (p == cent.size() || std::fabs(v - cent[p - 1]) <= std::fabs(cent[p] - v))) best = p - 1;
    r.assign[i] = uint32_t(best);
    double d = double(v) - cent[best];
    r.sse += d * d;
  }
  // Keep only centroids something maps to.
  std::vector<int64_t> remap(cent.size(), -1);
  std::vector<float> used;
  for (uint32_t a : r.assign)
    if (remap[a] < 0) remap[a] = 0;
  for (size_t j = 0; j < cent.size(); ++j)
    if (remap[j] >= 0) { remap[j] = int64_t(used.size()); used.push_back(cent[j]); }
  for (uint32_t& a : r.assign) a = uint32_t(remap[a]);
  r.centroids = used;
  return r;
}

}  // namespace compress
}  // namespace minnow
