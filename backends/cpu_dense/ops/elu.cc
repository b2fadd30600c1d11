// Elu: x >= 0 ? x : alpha * (exp(x) - 1) (alpha default 1). expm1 keeps precision near 0.
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct EluOp {
  float alpha;
  float operator()(float x) const { return x >= 0.0f ? x : alpha * std::expm1(x); }
};
}  // namespace

double elu_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> elu_make(const Node& node) {
  elu_bid(node);
  const EluOp op{node.attr_float("alpha", 1.0f)};
  return make_unary<float>(node, "f32_elu_ref", op);
}

}  // namespace cpu_dense
}  // namespace minnow
