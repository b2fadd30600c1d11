// Squeeze: drops size-1 dims (axes: attribute before opset 13, optional input from 13).
// The core's shape inference resolved the output shape; the kernel copies the elements.
#include "../copy.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double squeeze_bid(const Node& node) {
  return copy_bid_int64_arg(node, 1, node.op_version() >= 13 ? 2 : 1);
}

std::unique_ptr<Kernel> squeeze_make(const Node& node) {
  return copy_kernel(node, squeeze_bid, "squeeze_copy_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
