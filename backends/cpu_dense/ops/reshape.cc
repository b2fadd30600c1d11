// Reshape: same elements, new shape. The shape input (opset >= 5; an attribute before)
// was resolved by the core's shape inference, so the kernel copies and checks the count.
#include "../copy.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double reshape_bid(const Node& node) {
  const bool shape_input = node.op_version() >= 5;
  double f = copy_bid(node, shape_input ? 2 : 1, shape_input ? 2 : 1);
  if (shape_input) require_input_dtype(node, 1, {MN_I64});
  return f;
}

std::unique_ptr<Kernel> reshape_make(const Node& node) {
  reshape_bid(node);
  return std::make_unique<CopyKernel>(node, "reshape_copy_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
