// Relu: y = max(x, 0) (NaN -> 0), element-wise, in place allowed; SIMD kernel
// kernels::f32_relu.
#include "../kernels/eltwise.h"
#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

double relu_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> relu_make(const Node& node) {
  relu_bid(node);
  return make_unary<float>(
      node, "f32_relu__hwy",
      F32Run{[](const float* x, float* y, int64_t n, float, float) { kernels::f32_relu(x, y, n); }});
}

}  // namespace cpu_dense
}  // namespace minnow
