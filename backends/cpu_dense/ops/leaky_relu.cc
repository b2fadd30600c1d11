// LeakyRelu: x >= 0 ? x : alpha * x (alpha default 0.01); SIMD kernel
// kernels::f32_leaky_relu.
#include "../kernels/eltwise.h"
#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

double leaky_relu_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> leaky_relu_make(const Node& node) {
  leaky_relu_bid(node);
  const F32Run run{[](const float* x, float* y, int64_t n, float alpha, float) {
                     kernels::f32_leaky_relu(x, y, n, alpha);
                   },
                   node.attr_float("alpha", 0.01f)};
  return make_unary<float>(node, "f32_leaky_relu__hwy", run);
}

}  // namespace cpu_dense
}  // namespace minnow
