// What the ONNX frontend accepts: the ops that have a shape function in the engine (the
// core's standard ops), and per-op attribute values the kernels implement. Checked at
// import so that one message lists every node the engine could not run.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace minnow {
namespace onnx_frontend {

// Oldest and newest default-domain opset this frontend imports.
constexpr int kMinOpset = 6;
constexpr int kMaxOpset = 17;

// Ops of the default domain the engine has a shape function for (sorted).
const std::vector<std::string>& supported_ops();
bool is_supported_op(const std::string& op);

// Empty if the node is supported; otherwise what is missing (an attribute value, a form).
// `since_version` is the op's version resolved for the model's opset.
std::string check_node(const onnx::NodeProto& node, int since_version);

}  // namespace onnx_frontend
}  // namespace minnow
