// LogSoftmax: x - max - log(sum(exp(x - max))) along the axis (opset < 13: the coerced
// 2-D view; see softmax.h).
#include "../ops.h"
#include "../softmax.h"

namespace minnow {
namespace cpu_dense {

double logsoftmax_bid(const Node& node) {
  make_softmax_kernel(node, "f32_logsoftmax_ref", true);
  return 4.0 * numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> logsoftmax_make(const Node& node) {
  return make_softmax_kernel(node, "f32_logsoftmax_ref", true);
}

}  // namespace cpu_dense
}  // namespace minnow
