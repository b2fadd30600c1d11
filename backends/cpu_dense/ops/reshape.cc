// Reshape: same elements, new shape. The shape input (opset >= 5; an attribute before)
// was resolved by the core's shape inference, so the kernel copies and checks the count.
#include "../copy.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double reshape_bid(const Node& node) {
  const int n = node.op_version() >= 5 ? 2 : 1;
  return copy_bid_int64_arg(node, n, n);
}

std::unique_ptr<Kernel> reshape_make(const Node& node) {
  return copy_kernel(node, reshape_bid, "reshape_copy_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
