// ONNX NonMaxSuppression (opset 10 and 11+, default domain).
//
// inputs: boxes [B, S, 4], scores [B, C, S], then optional scalars (or 1-element
//   tensors): max_output_boxes_per_class (int64, default 0 = select nothing),
//   iou_threshold (float, default 0), score_threshold (float, default: none).
// attribute: center_point_box 0 ([y1, x1, y2, x2], either diagonal) or 1 ([xc, yc, w, h]).
// Per batch and class: boxes with score > score_threshold by descending score (ties:
// lower index first), greedy selection (a box is dropped when its IoU with a selected
// one is > iou_threshold), at most max_output_boxes_per_class. Output rows
// (batch, class, box), batch-major, then class, then selection order.
//
// output: int64 [K, 3], K = the number selected. The shape function declares the bound
//   B * C * min(max_output_boxes_per_class, S) (S when the max is not known at plan time)
//   as a run-time-sized output, and the kernel reports K (plugin ABI 1.2).
#include "box_utils.h"
#include "ssd_ops.h"

#include <algorithm>
#include <cstring>

namespace minnow {
namespace ops_ssd {

using plugin::Node;
using plugin::RunContext;
using plugin::TensorRef;

namespace {

enum { kBoxes = 0, kScores = 1, kMaxOut = 2, kIou = 3, kScoreThr = 4 };

void check(const Node& n) {
  if (n.num_inputs() < 2 || !n.has_input(kBoxes) || !n.has_input(kScores)) n.fail("needs inputs boxes and scores");
  TensorRef b = n.input(kBoxes), s = n.input(kScores);
  if (b.dtype() != MN_F32 || s.dtype() != MN_F32) n.fail("boxes and scores must be float32");
  if (b.rank() != 3 || s.rank() != 3) n.fail("boxes must be [B, S, 4] and scores [B, C, S]");
  if (b.dim(2) >= 0 && b.dim(2) != 4) n.fail("boxes' last dim must be 4");
  if (b.dim(0) >= 0 && s.dim(0) >= 0 && b.dim(0) != s.dim(0)) n.fail("boxes and scores disagree on the batch size");
  if (b.dim(1) >= 0 && s.dim(2) >= 0 && b.dim(1) != s.dim(2)) n.fail("boxes and scores disagree on the number of boxes");
  const int64_t cpb = n.attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) n.fail("center_point_box must be 0 or 1");
  for (int i : {kMaxOut, kIou, kScoreThr}) {
    if (!n.has_input(i)) continue;
    TensorRef t = n.input(i);
    if (t.shape_known() && t.elements() != 1) n.fail("input " + std::to_string(i) + " must hold one value");
    if (i == kMaxOut && t.dtype() != MN_I64 && t.dtype() != MN_I32) n.fail("max_output_boxes_per_class must be int64");
    if (i != kMaxOut && t.dtype() != MN_F32) n.fail("thresholds must be float32");
  }
}

int64_t read_max_out(const mn_tensor& t) {
  return t.dtype == MN_I64 ? *static_cast<const int64_t*>(t.data) : *static_cast<const int32_t*>(t.data);
}

class NmsKernel : public plugin::Kernel {
 public:
  explicit NmsKernel(bool center) : center_(center) {}
  const char* name() const override { return "nms_greedy_onnx"; }
  void run(const RunContext& ctx, const mn_tensor* in, int ni, mn_tensor* out, int) const override {
    const int64_t B = in[kBoxes].dims[0], S = in[kBoxes].dims[1], C = in[kScores].dims[1];
    auto present = [&](int i) { return i < ni && in[i].dtype != MN_UNDEFINED && in[i].data; };
    int64_t max_out = present(kMaxOut) ? read_max_out(in[kMaxOut]) : 0;
    const float iou_t = present(kIou) ? *static_cast<const float*>(in[kIou].data) : 0.f;
    const bool has_thr = present(kScoreThr);
    const float score_t = has_thr ? *static_cast<const float*>(in[kScoreThr].data) : 0.f;
    if (iou_t < 0.f || iou_t > 1.f)
      throw plugin::PluginError("NonMaxSuppression: iou_threshold " + std::to_string(iou_t) + " is outside [0, 1]");
    const float* bx = static_cast<const float*>(in[kBoxes].data);
    const float* sc = static_cast<const float*>(in[kScores].data);
    int64_t* o = static_cast<int64_t*>(out[0].data);
    const int64_t rows = out[0].dims[0];
    int64_t written = 0;
    std::vector<Box> boxes(static_cast<size_t>(S));
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < S; ++i) boxes[size_t(i)] = to_box(bx + (b * S + i) * 4);
      for (int64_t c = 0; c < C; ++c) {
        if (max_out <= 0) continue;
        const float* s = sc + (b * C + c) * S;
        std::vector<int32_t> order;
        for (int32_t i = 0; i < int32_t(S); ++i)
          if (!has_thr || s[i] > score_t) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return s[x] > s[y]; });
        for (int32_t i : greedy_nms(order, boxes.data(), iou_t, onnx_iou, max_out)) {
          if (written >= rows) throw plugin::PluginError("NonMaxSuppression: more selections than planned rows (bug)", MN_ERR_INTERNAL);
          int64_t* r = o + 3 * written++;
          r[0] = b;
          r[1] = c;
          r[2] = i;
        }
      }
    }
    ctx.set_output_dims(0, {written, 3});
  }

 private:
  Box to_box(const float* v) const {
    if (center_) return Box{v[0] - v[2] / 2.f, v[1] - v[3] / 2.f, v[0] + v[2] / 2.f, v[1] + v[3] / 2.f};
    // [y1, x1, y2, x2]: any diagonal pair.
    return Box{std::min(v[1], v[3]), std::min(v[0], v[2]), std::max(v[1], v[3]), std::max(v[0], v[2])};
  }
  bool center_;
};

}  // namespace

mn_status nms_shapes(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return plugin::guarded(err, [&] {
    Node n(node);
    check(n);
    TensorRef b = n.input(kBoxes), s = n.input(kScores);
    int64_t per_class = b.dim(1);
    TensorRef m = n.input(kMaxOut);
    if (n.has_input(kMaxOut) && m.t->data && m.shape_known() && m.elements() == 1) {
      int64_t v = read_max_out(*m.t);
      per_class = per_class < 0 ? -1 : std::max<int64_t>(0, std::min(v, per_class));
    } else if (!n.has_input(kMaxOut)) {
      per_class = 0;
    }
    int64_t rows = (b.dim(0) < 0 || s.dim(1) < 0 || per_class < 0) ? -1 : b.dim(0) * s.dim(1) * per_class;
    plugin::set_output(ctx, 0, MN_I64, {rows, 3});
    plugin::set_output_bound(ctx, 0);  // rows: an upper bound, the kernel reports K
    return MN_OK;
  });
}

std::unique_ptr<plugin::Kernel> make_nms(const Node& n) {
  check(n);
  return std::make_unique<NmsKernel>(n.attr_int("center_point_box", 0) != 0);
}

}  // namespace ops_ssd
}  // namespace minnow
