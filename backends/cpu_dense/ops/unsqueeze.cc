// Unsqueeze: inserts size-1 dims (axes: attribute before opset 13, input from 13). The
// core's shape inference resolved the output shape; the kernel copies the elements.
#include "../copy.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double unsqueeze_bid(const Node& node) {
  const int n = node.op_version() >= 13 ? 2 : 1;
  return copy_bid_int64_arg(node, n, n);
}

std::unique_ptr<Kernel> unsqueeze_make(const Node& node) {
  return copy_kernel(node, unsqueeze_bid, "unsqueeze_copy_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
