// LeakyRelu: x >= 0 ? x : alpha * x (alpha default 0.01).
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct LeakyReluOp {
  float alpha;
  float operator()(float x) const { return x >= 0.0f ? x : alpha * x; }
};
}  // namespace

double leaky_relu_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> leaky_relu_make(const Node& node) {
  leaky_relu_bid(node);
  const LeakyReluOp op{node.attr_float("alpha", 0.01f)};
  return make_unary<float>(node, "f32_leaky_relu_ref", op);
}

}  // namespace cpu_dense
}  // namespace minnow
