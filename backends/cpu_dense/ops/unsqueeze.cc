// Unsqueeze: inserts size-1 dims (axes: attribute before opset 13, input from 13). The
// core's shape inference resolved the output shape; the kernel copies the elements.
#include "../copy.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double unsqueeze_bid(const Node& node) {
  const bool axes_input = node.op_version() >= 13;
  double f = copy_bid(node, axes_input ? 2 : 1, axes_input ? 2 : 1);
  if (axes_input) require_input_dtype(node, 1, {MN_I64});
  return f;
}

std::unique_ptr<Kernel> unsqueeze_make(const Node& node) {
  unsqueeze_bid(node);
  return std::make_unique<CopyKernel>(node, "unsqueeze_copy_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
