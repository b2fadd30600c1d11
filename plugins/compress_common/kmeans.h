// 1-D k-means for weight sharing (Deep Compression): centroids start linearly spaced
// between min and max (the initialisation Han et al. found best: it keeps a few large
// weights represented), then Lloyd iterations on sorted values. Deterministic.
#pragma once

#include <cstdint>
#include <vector>

namespace minnow {
namespace compress {

struct KMeansResult {
  std::vector<float> centroids;   // ascending
  std::vector<uint32_t> assign;   // per value
  double sse = 0;
};

// k >= 1; values may be empty (returns k zero... one centroid 0).
KMeansResult kmeans_1d(const std::vector<float>& values, int k, int iterations = 30);

}  // namespace compress
}  // namespace minnow
