// Boxes, overlaps and greedy NMS shared by DetectionOutput (Caffe semantics) and
// NonMaxSuppression (ONNX semantics). The two differ in how they treat degenerate boxes
// and ties, so each keeps its own IoU; the greedy loop is the same.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace minnow {
namespace ops_ssd {

struct Box {
  float xmin, ymin, xmax, ymax;
};

// Caffe's JaccardOverlap on normalized boxes: 0 without intersection; a box with
// xmax < xmin or ymax < ymin has size 0.
inline float caffe_iou(const Box& a, const Box& b) {
  if (b.xmin > a.xmax || b.xmax < a.xmin || b.ymin > a.ymax || b.ymax < a.ymin) return 0.f;
  auto size = [](const Box& x) {
    return (x.xmax < x.xmin || x.ymax < x.ymin) ? 0.f : (x.xmax - x.xmin) * (x.ymax - x.ymin);
  };
  const float iw = std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin);
  const float ih = std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin);
  if (iw <= 0.f || ih <= 0.f) return 0.f;  // an inverted box: Caffe also returns 0
  const float inter = iw * ih;
  return inter / (size(a) + size(b) - inter);
}

// IoU as ONNX Runtime's NonMaxSuppression computes it (boxes already ordered min/max):
// 0 when either area is not positive or there is no overlap.
inline float onnx_iou(const Box& a, const Box& b) {
  const float area_a = (a.xmax - a.xmin) * (a.ymax - a.ymin);
  const float area_b = (b.xmax - b.xmin) * (b.ymax - b.ymin);
  if (area_a <= 0.f || area_b <= 0.f) return 0.f;
  const float iw = std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin);
  const float ih = std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin);
  if (iw <= 0.f || ih <= 0.f) return 0.f;
  const float inter = iw * ih;
  return inter / (area_a + area_b - inter);
}

// Indices i with scores[i] > threshold, by descending score; equal scores keep index
// order (Caffe's stable_sort). At most `top_k` when top_k >= 0.
inline std::vector<int32_t> ranked(const float* scores, int32_t n, int64_t stride, float threshold, int64_t top_k) {
  std::vector<int32_t> idx;
  for (int32_t i = 0; i < n; ++i)
    if (scores[i * stride] > threshold) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int32_t a, int32_t b) { return scores[a * stride] > scores[b * stride]; });
  if (top_k >= 0 && int64_t(idx.size()) > top_k) idx.resize(size_t(top_k));
  return idx;
}

// Greedy NMS over `order` (already ranked): keeps a box when its IoU with every kept
// box is <= threshold. Stops at max_keep kept boxes (< 0: no limit). `eta` < 1 shrinks
// the threshold after each kept box while it is above 0.5 (Caffe's adaptive NMS).
template <class Iou>
std::vector<int32_t> greedy_nms(const std::vector<int32_t>& order, const Box* boxes, float threshold,
                                Iou iou, int64_t max_keep = -1, float eta = 1.f) {
  std::vector<int32_t> keep;
  float t = threshold;
  for (int32_t i : order) {
    if (max_keep >= 0 && int64_t(keep.size()) >= max_keep) break;
    bool ok = true;
    for (int32_t k : keep)
      if (iou(boxes[i], boxes[k]) > t) {
        ok = false;
        break;
      }
    if (!ok) continue;
    keep.push_back(i);
    if (eta < 1.f && t > 0.5f) t *= eta;
  }
  return keep;
}

}  // namespace ops_ssd
}  // namespace minnow
