// The ops_ssd plugin: caffe::PriorBox, caffe::DetectionOutput and ONNX
// NonMaxSuppression (op definitions + the backend "ops_ssd" that runs them).
#include "ssd_ops.h"

namespace minnow {
namespace ops_ssd {
namespace {

using plugin::Bid;
using plugin::Node;
using plugin::PluginError;

class SsdBackend : public plugin::Backend {
 public:
  const char* name() const override { return "ops_ssd"; }
  Bid bid(const Node& n) const override {
    // Validating by building the kernel: a bad node is refused with the reason.
    if (n.domain() == "caffe" && n.op() == "PriorBox") return make_prior_box(n), Bid::yes(1000);
    if (n.domain() == "caffe" && n.op() == "DetectionOutput") return make_detection_output(n), Bid::yes(10000);
    if (n.domain().empty() && n.op() == "NonMaxSuppression") return make_nms(n), Bid::yes(10000);
    return Bid::no("ops_ssd runs caffe::PriorBox, caffe::DetectionOutput and NonMaxSuppression only");
  }
  std::unique_ptr<plugin::Kernel> prepare(const Node& n) const override {
    if (n.op() == "PriorBox") return make_prior_box(n);
    if (n.op() == "DetectionOutput") return make_detection_output(n);
    if (n.op() == "NonMaxSuppression") return make_nms(n);
    n.fail("not an op of the ops_ssd backend", MN_ERR_UNSUPPORTED);
  }
};

mn_status register_ops_ssd(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  return plugin::guarded(err, [&] {
    mn_backend backend;
    plugin::export_backend(std::make_unique<SsdBackend>(), &backend);
    mn_status s = reg->add_backend(reg->host, &backend);
    if (s != MN_OK) {
      backend.destroy(backend.user);
      throw PluginError("add_backend failed", s);
    }
    const mn_op_def defs[] = {
        {sizeof(mn_op_def), "caffe", "PriorBox", 1, 1, prior_box_shapes, nullptr, 0},
        {sizeof(mn_op_def), "caffe", "DetectionOutput", 1, 1, detection_output_shapes, nullptr, 0},
        // Opset 10 and 11 differ only in optional-input handling, which this follows.
        // Its shape function reads max_output_boxes_per_class (input 2) for the bound.
        {sizeof(mn_op_def), "", "NonMaxSuppression", 10, 22, nms_shapes, nullptr, uint64_t(1) << 2},
    };
    for (const auto& d : defs)
      if ((s = reg->add_op(reg->host, &d)) != MN_OK) throw PluginError(std::string("add_op ") + d.name + " failed", s);
    return MN_OK;
  });
}

}  // namespace
}  // namespace ops_ssd
}  // namespace minnow

MINNOW_DEFINE_PLUGIN("ops_ssd", "0.1.0", "SSD ops: caffe::PriorBox, caffe::DetectionOutput, NonMaxSuppression",
                     minnow::ops_ssd::register_ops_ssd)
