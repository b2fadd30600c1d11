// Squeeze: drops size-1 dims (axes: attribute before opset 13, optional input from 13).
// The core's shape inference resolved the output shape; the kernel copies the elements.
#include "../copy.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double squeeze_bid(const Node& node) {
  double f = copy_bid(node, 1, node.op_version() >= 13 ? 2 : 1);
  if (node.has_input(1)) require_input_dtype(node, 1, {MN_I64});
  return f;
}

std::unique_ptr<Kernel> squeeze_make(const Node& node) {
  squeeze_bid(node);
  return std::make_unique<CopyKernel>(node, "squeeze_copy_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
