// Sigmoid: 1 / (1 + exp(-x)), evaluated so exp never overflows (exp of a
// non-positive number only).
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct SigmoidOp {
  float operator()(float x) const {
    if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
    const float e = std::exp(x);
    return e / (1.0f + e);
  }
};
}  // namespace

double sigmoid_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> sigmoid_make(const Node& node) {
  sigmoid_bid(node);
  return make_unary<float>(node, "f32_sigmoid_ref", SigmoidOp());
}

}  // namespace cpu_dense
}  // namespace minnow
