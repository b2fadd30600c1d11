// Detection mAP as `minnow eval --task detection` computes it: PASCAL VOC style, all-points
// interpolated AP per class at one IoU threshold (VOC2010+, Caffe's ap_version "Integral"),
// mean over the classes that have ground truth.
#pragma once

#include <minnow/status.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace minnow {
namespace cli {

using BoxXyxy = std::array<float, 4>;  // xmin, ymin, xmax, ymax

struct GtImage {
  std::vector<BoxXyxy> boxes;
  std::vector<int> labels;  // in the detector's label space (see read_detection_ground_truth)
};

struct Detection {
  int64_t image = 0;
  int label = 0;
  float score = 0;
  BoxXyxy box{};
};

struct MapResult {
  double map = 0;
  std::map<int, double> ap;  // per class with ground truth
};

// Reads [{"image": i, "boxes_xyxy_norm": [[x0, y0, x1, y1], ...], "labels": [l, ...]}, ...];
// each label is shifted by `label_offset` (ssd_fmnist: detector label = dataset label + 1,
// label 0 being the background). Images absent from the file have no ground truth.
Result<std::vector<GtImage>> read_detection_ground_truth(const std::string& path, int label_offset);

// Per class: detections over all images by descending score (stable: image order, then the
// order given), each matched to the unused ground-truth box of its image with the highest
// IoU if that IoU >= iou_threshold (true positive), else a false positive; AP is the area
// under the precision-recall curve with precision made monotone (all points).
MapResult voc_map(const std::vector<Detection>& detections, const std::vector<GtImage>& ground_truth,
                  double iou_threshold = 0.5);

}  // namespace cli
}  // namespace minnow
