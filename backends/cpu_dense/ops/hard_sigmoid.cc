// HardSigmoid: max(0, min(1, alpha * x + beta)) (alpha 0.2, beta 0.5).
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct HardSigmoidOp {
  float alpha;
  float beta;
  float operator()(float x) const { return std::min(1.0f, std::max(0.0f, alpha * x + beta)); }
};
}  // namespace

double hard_sigmoid_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> hard_sigmoid_make(const Node& node) {
  hard_sigmoid_bid(node);
  const HardSigmoidOp op{node.attr_float("alpha", 0.2f), node.attr_float("beta", 0.5f)};
  return make_unary<float>(node, "f32_hard_sigmoid_ref", op);
}

}  // namespace cpu_dense
}  // namespace minnow
