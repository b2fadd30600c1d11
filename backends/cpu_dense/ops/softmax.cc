// Softmax: exp(x - max) / sum(exp(x - max)) along the axis (opset < 13: the coerced 2-D
// view; see softmax.h).
#include "../softmax.h"

#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double softmax_bid(const Node& node) {
  make_softmax_kernel(node, "f32_softmax_ref", false);
  return 4.0 * numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> softmax_make(const Node& node) {
  return make_softmax_kernel(node, "f32_softmax_ref", false);
}

}  // namespace cpu_dense
}  // namespace minnow
