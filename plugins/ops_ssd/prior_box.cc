// caffe::PriorBox (version 1): SSD default boxes, exactly as Caffe-SSD's PriorBoxLayer.
//
// inputs: 0 feature map [N, C, H, W], 1 image [N, C, img_h, img_w] (only shapes are read).
// attributes (Caffe PriorBoxParameter names): min_size (floats, required), max_size
//   (floats, none or one per min_size, each > its min_size), aspect_ratio (floats),
//   flip (int, 1), clip (int, 0), variance (floats: none -> 0.1, one, or four),
//   img_size | img_h, img_w (int, 0 = image input's dims), step | step_h, step_w
//   (float, 0 = img / feature dim), offset (float, 0.5).
// output: float32 [1, 2, H * W * num_priors * 4]: channel 0 the boxes (xmin, ymin, xmax,
//   ymax, normalized by the image size), channel 1 their variances.
// Order: row-major over (h, w); per location, per min_size: the min_size square, the
//   sqrt(min_size * max_size) square (if max sizes are given), then one box per aspect
//   ratio other than 1 (list order; with flip, each ratio r is followed by 1/r).
#include "ssd_ops.h"

#include <cmath>
#include <string>
#include <vector>

namespace minnow {
namespace ops_ssd {

using plugin::Node;
using plugin::RunContext;

namespace {

struct PriorConfig {
  std::vector<float> min_sizes, max_sizes, ratios, variance;
  bool clip = false;
  int64_t img_h = 0, img_w = 0;
  float step_h = 0, step_w = 0, offset = 0.5f;
  int64_t num_priors() const { return int64_t(ratios.size() * min_sizes.size() + max_sizes.size()); }
};

PriorConfig read_prior_config(const Node& n) {
  PriorConfig c;
  if (n.num_inputs() < 2 || !n.has_input(0) || !n.has_input(1)) n.fail("needs inputs feature map and image");
  for (int i : {0, 1})
    if (n.input(i).rank() >= 0 && n.input(i).rank() != 4)
      n.fail(std::string(i ? "image" : "feature map") + " input must have rank 4 (NCHW)");
  c.min_sizes = n.attr_floats("min_size");
  if (c.min_sizes.empty()) n.fail("min_size is required");
  for (float s : c.min_sizes)
    if (!(s > 0)) n.fail("min_size must be positive");
  c.max_sizes = n.attr_floats("max_size");
  if (!c.max_sizes.empty()) {
    if (c.max_sizes.size() != c.min_sizes.size()) n.fail("max_size must have as many values as min_size");
    for (size_t i = 0; i < c.max_sizes.size(); ++i)
      if (!(c.max_sizes[i] > c.min_sizes[i])) n.fail("max_size must be greater than min_size");
  }
  const bool flip = n.attr_int("flip", 1) != 0;
  c.ratios.push_back(1.f);
  for (float ar : n.attr_floats("aspect_ratio")) {
    if (!(ar > 0)) n.fail("aspect_ratio must be positive");
    bool known = false;
    for (float r : c.ratios) known = known || std::fabs(ar - r) < 1e-6f;
    if (known) continue;
    c.ratios.push_back(ar);
    if (flip) c.ratios.push_back(1.f / ar);
  }
  c.clip = n.attr_int("clip", 0) != 0;
  c.variance = n.attr_floats("variance");
  if (c.variance.empty()) c.variance = {0.1f};
  if (c.variance.size() != 1 && c.variance.size() != 4) n.fail("variance must have 1 or 4 values");
  for (float v : c.variance)
    if (!(v > 0)) n.fail("variance must be positive");
  if (n.has_attr("img_size")) {
    if (n.has_attr("img_h") || n.has_attr("img_w")) n.fail("give img_size or img_h/img_w, not both");
    c.img_h = c.img_w = n.attr_int("img_size", 0);
  } else {
    c.img_h = n.attr_int("img_h", 0);
    c.img_w = n.attr_int("img_w", 0);
  }
  if (c.img_h < 0 || c.img_w < 0) n.fail("image size must not be negative");
  if (n.has_attr("step")) {
    if (n.has_attr("step_h") || n.has_attr("step_w")) n.fail("give step or step_h/step_w, not both");
    c.step_h = c.step_w = n.attr_float("step", 0);
  } else {
    c.step_h = n.attr_float("step_h", 0);
    c.step_w = n.attr_float("step_w", 0);
  }
  if (c.step_h < 0 || c.step_w < 0) n.fail("step must not be negative");
  c.offset = n.attr_float("offset", 0.5f);
  return c;
}

class PriorBoxKernel : public plugin::Kernel {
 public:
  explicit PriorBoxKernel(PriorConfig c) : c_(std::move(c)) {}
  const char* name() const override { return "f32_caffe_priorbox"; }
  void run(const RunContext&, const mn_tensor* in, int, mn_tensor* out, int) const override {
    const int64_t H = in[0].dims[2], W = in[0].dims[3];
    const float img_h = float(c_.img_h ? c_.img_h : in[1].dims[2]);
    const float img_w = float(c_.img_w ? c_.img_w : in[1].dims[3]);
    const float step_h = c_.step_h > 0 ? c_.step_h : img_h / float(H);
    const float step_w = c_.step_w > 0 ? c_.step_w : img_w / float(W);
    float* box = static_cast<float*>(out[0].data);
    const int64_t count = H * W * c_.num_priors() * 4;
    float* p = box;
    auto put = [&](float cx, float cy, float bw, float bh) {
      *p++ = (cx - bw / 2.f) / img_w;
      *p++ = (cy - bh / 2.f) / img_h;
      *p++ = (cx + bw / 2.f) / img_w;
      *p++ = (cy + bh / 2.f) / img_h;
    };
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) {
        const float cx = (float(w) + c_.offset) * step_w, cy = (float(h) + c_.offset) * step_h;
        for (size_t s = 0; s < c_.min_sizes.size(); ++s) {
          const float mn = c_.min_sizes[s];
          put(cx, cy, mn, mn);
          if (!c_.max_sizes.empty()) {
            const float sq = std::sqrt(mn * c_.max_sizes[s]);
            put(cx, cy, sq, sq);
          }
          for (float ar : c_.ratios) {
            if (std::fabs(ar - 1.f) < 1e-6f) continue;
            put(cx, cy, mn * std::sqrt(ar), mn / std::sqrt(ar));
          }
        }
      }
    if (c_.clip)
      for (int64_t i = 0; i < count; ++i) box[i] = std::fmin(std::fmax(box[i], 0.f), 1.f);
    float* var = box + count;
    for (int64_t i = 0; i < count; ++i) var[i] = c_.variance.size() == 1 ? c_.variance[0] : c_.variance[size_t(i % 4)];
  }

 private:
  PriorConfig c_;
};

}  // namespace

mn_status prior_box_shapes(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return plugin::guarded(err, [&] {
    Node n(node);
    PriorConfig c = read_prior_config(n);
    const plugin::TensorRef f = n.input(0);
    int64_t len = -1;
    if (f.rank() == 4 && f.dim(2) >= 0 && f.dim(3) >= 0) len = f.dim(2) * f.dim(3) * c.num_priors() * 4;
    plugin::set_output(ctx, 0, MN_F32, {1, 2, len});
    return MN_OK;
  });
}

std::unique_ptr<plugin::Kernel> make_prior_box(const Node& n) {
  return std::make_unique<PriorBoxKernel>(read_prior_config(n));
}

}  // namespace ops_ssd
}  // namespace minnow
