// caffe::DetectionOutput (version 1): SSD decoding + per-class NMS, as Caffe-SSD's
// DetectionOutputLayer (CPU path) does it.
//
// inputs: 0 loc  [N, P * L * 4] (any shape with that many values per image; L = 1 with
//              share_location, else num_classes), 1 conf [N, P * num_classes] class
//              probabilities (Caffe puts a Softmax before this layer), 2 priors
//              [1, 2, P * 4] (PriorBox output: boxes, then variances).
// attributes: num_classes (required), share_location (1), background_label_id (0),
//   nms_threshold (0.3), top_k (-1 = all), keep_top_k (-1 = all), confidence_threshold
//   (absent = keep every score), eta (1, adaptive NMS), code_type ("CENTER_SIZE" or
//   "CORNER"), variance_encoded_in_target (0).
// Procedure per image: decode every prior's box (CENTER_SIZE: cx = v0*l0*pw + pcx,
//   cy = v1*l1*ph + pcy, w = exp(v2*l2)*pw, h = exp(v3*l3)*ph; with
//   variance_encoded_in_target the v's are 1); per class except the background: scores
//   > confidence_threshold, best top_k, greedy NMS (IoU > nms_threshold suppresses);
//   then if more than keep_top_k detections remain, keep the keep_top_k best over all
//   classes. Rows are grouped by label (ascending), by score within a label, as Caffe.
// output: float32 [1, 1, K, 7], rows (image_id, label, score, xmin, ymin, xmax, ymax),
//   K = the number of detections. The shape function declares the bound N * keep_top_k
//   (or N * classes * min(top_k, P) when keep_top_k < 0, at least N) as a run-time-sized
//   output and the kernel reports K (plugin ABI 1.2). With no detection at all, as Caffe:
//   one row per image (image_id, -1, -1, -1, -1, -1, -1).
#include "box_utils.h"
#include "ssd_ops.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

namespace minnow {
namespace ops_ssd {

using plugin::Node;
using plugin::RunContext;

namespace {

struct DetConfig {
  int64_t num_classes = 0, background = 0, top_k = -1, keep_top_k = -1;
  bool share_location = true, corner = false, variance_in_target = false;
  float nms_threshold = 0.3f, confidence = -FLT_MAX, eta = 1.f;
};

DetConfig read_det_config(const Node& n) {
  DetConfig c;
  if (n.num_inputs() < 3 || !n.has_input(0) || !n.has_input(1) || !n.has_input(2))
    n.fail("needs inputs loc, conf and priors");
  for (int i = 0; i < 3; ++i)
    if (n.input(i).dtype() != MN_F32) n.fail("input " + std::to_string(i) + " must be float32");
  c.num_classes = n.attr_int("num_classes", 0);
  if (c.num_classes <= 0) n.fail("num_classes is required and must be positive");
  c.share_location = n.attr_int("share_location", 1) != 0;
  c.background = n.attr_int("background_label_id", 0);
  if (c.background >= c.num_classes) n.fail("background_label_id is not below num_classes");
  c.nms_threshold = n.attr_float("nms_threshold", 0.3f);
  if (c.nms_threshold < 0) n.fail("nms_threshold must not be negative");
  c.top_k = n.attr_int("top_k", -1);
  c.keep_top_k = n.attr_int("keep_top_k", -1);
  if (n.has_attr("confidence_threshold")) c.confidence = n.attr_float("confidence_threshold", 0.f);
  c.eta = n.attr_float("eta", 1.f);
  if (!(c.eta > 0 && c.eta <= 1)) n.fail("eta must be in (0, 1]");
  std::string code = n.attr_string("code_type", "CENTER_SIZE");
  if (code == "CORNER") c.corner = true;
  else if (code != "CENTER_SIZE") n.fail("code_type '" + code + "' is not supported (CENTER_SIZE or CORNER)");
  c.variance_in_target = n.attr_int("variance_encoded_in_target", 0) != 0;
  return c;
}

// Number of priors, checking the three inputs agree (when their shapes are known).
int64_t num_priors(const Node& n, const DetConfig& c) {
  plugin::TensorRef pr = n.input(2);
  if (pr.rank() != 3 || (pr.dim(1) >= 0 && pr.dim(1) != 2)) n.fail("priors must be [1, 2, P*4]");
  if (pr.dim(2) < 0) return -1;
  if (pr.dim(2) % 4) n.fail("priors length " + std::to_string(pr.dim(2)) + " is not a multiple of 4");
  const int64_t P = pr.dim(2) / 4, L = c.share_location ? 1 : c.num_classes;
  auto per_image = [](const plugin::TensorRef& t) -> int64_t {
    if (!t.shape_known() || t.rank() < 1) return -1;
    return t.dim(0) ? t.elements() / t.dim(0) : 0;
  };
  const int64_t nl = per_image(n.input(0)), nc = per_image(n.input(1));
  if (nl >= 0 && nl != P * L * 4)
    n.fail("loc has " + std::to_string(nl) + " values per image; " + std::to_string(P) + " priors need " + std::to_string(P * L * 4));
  if (nc >= 0 && nc != P * c.num_classes)
    n.fail("conf has " + std::to_string(nc) + " values per image; " + std::to_string(P) + " priors x " +
           std::to_string(c.num_classes) + " classes need " + std::to_string(P * c.num_classes));
  if (n.input(0).rank() >= 1 && n.input(1).rank() >= 1 && n.input(0).dim(0) >= 0 && n.input(1).dim(0) >= 0 &&
      n.input(0).dim(0) != n.input(1).dim(0))
    n.fail("loc and conf disagree on the batch size");
  return P;
}

int64_t max_rows(const DetConfig& c, int64_t N, int64_t P) {
  if (N < 0 || P < 0) return -1;
  const int64_t classes = c.num_classes - (c.background >= 0 ? 1 : 0);
  const int64_t per_class = c.top_k >= 0 ? std::min(c.top_k, P) : P;
  int64_t per_image = classes * per_class;
  if (c.keep_top_k >= 0) per_image = std::min(per_image, c.keep_top_k);
  return N * std::max<int64_t>(per_image, 1);
}

class DetectionOutputKernel : public plugin::Kernel {
 public:
  explicit DetectionOutputKernel(DetConfig c) : c_(c) {}
  const char* name() const override { return "f32_caffe_detection_output"; }

  void run(const RunContext& ctx, const mn_tensor* in, int, mn_tensor* out, int) const override {
    const int64_t N = in[0].dims[0], P = in[2].dims[2] / 4, C = c_.num_classes;
    const int64_t L = c_.share_location ? 1 : C;
    const float* loc = static_cast<const float*>(in[0].data);
    const float* conf = static_cast<const float*>(in[1].data);
    const float* prior = static_cast<const float*>(in[2].data);
    const float* var = prior + P * 4;
    const int64_t rows = out[0].dims[2];
    float* o = static_cast<float*>(out[0].data);
    int64_t written = 0;
    std::vector<Box> boxes(size_t(P * L));
    for (int64_t img = 0; img < N; ++img) {
      // Decode.
      for (int64_t p = 0; p < P; ++p) {
        const float* pb = prior + p * 4;
        const float* pv = var + p * 4;
        for (int64_t l = 0; l < L; ++l) {
          if (!c_.share_location && l == c_.background) continue;
          const float* lc = loc + ((img * P + p) * L + l) * 4;
          boxes[size_t(l * P + p)] = decode(pb, pv, lc);
        }
      }
      // Per-class NMS.
      std::map<int64_t, std::vector<int32_t>> kept;
      int64_t total = 0;
      const float* sc = conf + img * P * C;
      for (int64_t cls = 0; cls < C; ++cls) {
        if (cls == c_.background) continue;
        std::vector<int32_t> order = ranked(sc + cls, int32_t(P), C, c_.confidence, c_.top_k);
        const Box* cb = boxes.data() + (c_.share_location ? 0 : cls * P);
        kept[cls] = greedy_nms(order, cb, c_.nms_threshold, caffe_iou, -1, c_.eta);
        total += int64_t(kept[cls].size());
      }
      if (c_.keep_top_k >= 0 && total > c_.keep_top_k) {
        std::vector<std::pair<float, std::pair<int64_t, int32_t>>> all;
        for (auto& kv : kept)
          for (int32_t i : kv.second) all.push_back({sc[i * C + kv.first], {kv.first, i}});
        std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        all.resize(size_t(c_.keep_top_k));
        kept.clear();
        for (auto& e : all) kept[e.second.first].push_back(e.second.second);
      }
      for (auto& kv : kept)
        for (int32_t i : kv.second) {
          if (written >= rows) throw plugin::PluginError("DetectionOutput: more detections than planned rows (bug)", MN_ERR_INTERNAL);
          const Box& b = boxes[size_t((c_.share_location ? 0 : kv.first * P) + i)];
          float* r = o + written++ * 7;
          r[0] = float(img);
          r[1] = float(kv.first);
          r[2] = sc[i * C + kv.first];
          r[3] = b.xmin;
          r[4] = b.ymin;
          r[5] = b.xmax;
          r[6] = b.ymax;
        }
    }
    if (written == 0) {  // Caffe's "no detection" rows, one per image
      for (int64_t img = 0; img < N; ++img) {
        float* row = o + img * 7;
        for (int k = 0; k < 7; ++k) row[k] = -1.f;
        row[0] = float(img);
      }
      written = N;
    }
    ctx.set_output_dims(0, {1, 1, written, 7});
  }

 private:
  Box decode(const float* pb, const float* pv, const float* l) const {
    static const float one[4] = {1.f, 1.f, 1.f, 1.f};
    const float* v = c_.variance_in_target ? one : pv;
    if (c_.corner) return Box{pb[0] + v[0] * l[0], pb[1] + v[1] * l[1], pb[2] + v[2] * l[2], pb[3] + v[3] * l[3]};
    const float pw = pb[2] - pb[0], ph = pb[3] - pb[1];
    const float pcx = (pb[0] + pb[2]) / 2.f, pcy = (pb[1] + pb[3]) / 2.f;
    const float cx = v[0] * l[0] * pw + pcx, cy = v[1] * l[1] * ph + pcy;
    const float w = std::exp(v[2] * l[2]) * pw, h = std::exp(v[3] * l[3]) * ph;
    return Box{cx - w / 2.f, cy - h / 2.f, cx + w / 2.f, cy + h / 2.f};
  }

  DetConfig c_;
};

}  // namespace

mn_status detection_output_shapes(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return plugin::guarded(err, [&] {
    Node n(node);
    DetConfig c = read_det_config(n);
    const int64_t P = num_priors(n, c);
    const int64_t N = n.input(0).rank() >= 1 ? n.input(0).dim(0) : -1;
    plugin::set_output(ctx, 0, MN_F32, {1, 1, max_rows(c, N, P), 7});
    plugin::set_output_bound(ctx, 0);  // rows: an upper bound, the kernel reports K
    return MN_OK;
  });
}

std::unique_ptr<plugin::Kernel> make_detection_output(const Node& n) {
  DetConfig c = read_det_config(n);
  num_priors(n, c);
  return std::make_unique<DetectionOutputKernel>(c);
}

}  // namespace ops_ssd
}  // namespace minnow
