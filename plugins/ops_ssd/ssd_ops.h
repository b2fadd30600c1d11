// The ops of the ops_ssd plugin: shape functions and kernel factories (one file per op).
#pragma once

#include <minnow/plugin.hpp>

#include <memory>

namespace minnow {
namespace ops_ssd {

// caffe::PriorBox (prior_box.cc)
mn_status prior_box_shapes(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err);
std::unique_ptr<plugin::Kernel> make_prior_box(const plugin::Node& n);
// caffe::DetectionOutput (detection_output.cc)
mn_status detection_output_shapes(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err);
std::unique_ptr<plugin::Kernel> make_detection_output(const plugin::Node& n);
// NonMaxSuppression, ONNX default domain (nms.cc)
mn_status nms_shapes(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err);
std::unique_ptr<plugin::Kernel> make_nms(const plugin::Node& n);

}  // namespace ops_ssd
}  // namespace minnow
