#include "detection_eval.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>

namespace minnow {
namespace cli {

Result<std::vector<GtImage>> read_detection_ground_truth(const std::string& path, int label_offset) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open ground truth '" + path + "'");
  std::vector<GtImage> out;
  try {
    nlohmann::json j;
    in >> j;
    if (!j.is_array()) return invalid_argument(path + ": ground truth must be a JSON array of images");
    for (const auto& e : j) {
      const int64_t i = e.at("image").get<int64_t>();
      if (i < 0 || i > (int64_t(1) << 31)) return invalid_argument(path + ": image index " + std::to_string(i) + " out of range");
      if (size_t(i) >= out.size()) out.resize(size_t(i) + 1);
      GtImage& g = out[size_t(i)];
      const auto& boxes = e.at("boxes_xyxy_norm");
      const auto& labels = e.at("labels");
      if (boxes.size() != labels.size())
        return invalid_argument(path + ": image " + std::to_string(i) + " has " + std::to_string(boxes.size()) + " boxes but " + std::to_string(labels.size()) + " labels");
      for (size_t k = 0; k < boxes.size(); ++k) {
        if (boxes[k].size() != 4) return invalid_argument(path + ": image " + std::to_string(i) + ": a box needs 4 numbers");
        g.boxes.push_back({boxes[k][0].get<float>(), boxes[k][1].get<float>(), boxes[k][2].get<float>(), boxes[k][3].get<float>()});
        g.labels.push_back(labels[k].get<int>() + label_offset);
      }
    }
  } catch (const std::exception& e) {
    return invalid_argument(path + ": " + e.what());
  }
  return out;
}

namespace {

double iou(const BoxXyxy& a, const BoxXyxy& b) {
  const double w = std::max(0.0, double(std::min(a[2], b[2])) - std::max(a[0], b[0]));
  const double h = std::max(0.0, double(std::min(a[3], b[3])) - std::max(a[1], b[1]));
  const double inter = w * h;
  const double aa = double(a[2] - a[0]) * (a[3] - a[1]), ab = double(b[2] - b[0]) * (b[3] - b[1]);
  return inter / (aa + ab - inter + 1e-12);
}

// Area under the precision-recall curve, precision made non-increasing from the right.
double all_points_ap(const std::vector<double>& rec, const std::vector<double>& prec) {
  std::vector<double> mrec{0.0}, mpre{0.0};
  mrec.insert(mrec.end(), rec.begin(), rec.end());
  mpre.insert(mpre.end(), prec.begin(), prec.end());
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (size_t i = mpre.size() - 1; i-- > 0;) mpre[i] = std::max(mpre[i], mpre[i + 1]);
  double ap = 0;
  for (size_t i = 0; i + 1 < mrec.size(); ++i)
    if (mrec[i + 1] != mrec[i]) ap += (mrec[i + 1] - mrec[i]) * mpre[i + 1];
  return ap;
}

}  // namespace

MapResult voc_map(const std::vector<Detection>& dets, const std::vector<GtImage>& gt, double iou_threshold) {
  std::set<int> classes;
  for (const auto& g : gt) classes.insert(g.labels.begin(), g.labels.end());
  MapResult r;
  for (int c : classes) {
    int64_t npos = 0;
    std::vector<std::vector<bool>> used(gt.size());
    for (size_t i = 0; i < gt.size(); ++i) {
      used[i].assign(gt[i].boxes.size(), false);
      npos += std::count(gt[i].labels.begin(), gt[i].labels.end(), c);
    }
    std::vector<const Detection*> mine;
    for (const auto& d : dets)
      if (d.label == c) mine.push_back(&d);
    std::stable_sort(mine.begin(), mine.end(), [](const Detection* a, const Detection* b) { return a->image < b->image; });
    std::stable_sort(mine.begin(), mine.end(), [](const Detection* a, const Detection* b) { return a->score > b->score; });
    std::vector<double> rec, prec;
    int64_t tp = 0, fp = 0;
    for (const Detection* d : mine) {
      bool hit = false;
      if (d->image >= 0 && size_t(d->image) < gt.size()) {
        const GtImage& g = gt[size_t(d->image)];
        double best = -1;
        size_t bj = 0;
        for (size_t j = 0; j < g.boxes.size(); ++j) {
          if (g.labels[j] != c) continue;
          double o = iou(d->box, g.boxes[j]);
          if (o > best) best = o, bj = j;
        }
        // The best-overlapping box of the class decides, used or not (VOC).
        if (best >= iou_threshold && !used[size_t(d->image)][bj]) {
          used[size_t(d->image)][bj] = true;
          hit = true;
        }
      }
      (hit ? tp : fp) += 1;
      rec.push_back(double(tp) / double(npos));
      prec.push_back(double(tp) / std::max(double(tp + fp), 1e-12));
    }
    r.ap[c] = all_points_ap(rec, prec);
  }
  double sum = 0;
  for (const auto& kv : r.ap) sum += kv.second;
  r.map = r.ap.empty() ? 0.0 : sum / double(r.ap.size());
  return r;
}

}  // namespace cli
}  // namespace minnow
