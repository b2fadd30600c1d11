// Relu: y = max(x, 0), element-wise, in place allowed.
#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct ReluOp {
  float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
};
}  // namespace

double relu_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> relu_make(const Node& node) {
  relu_bid(node);
  return make_unary<float>(node, "f32_relu_ref", ReluOp());
}

}  // namespace cpu_dense
}  // namespace minnow
