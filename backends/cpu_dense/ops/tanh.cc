// Tanh: hyperbolic tangent.
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct TanhOp {
  float operator()(float x) const { return std::tanh(x); }
};
}  // namespace

double tanh_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> tanh_make(const Node& node) {
  tanh_bid(node);
  return make_unary<float>(node, "f32_tanh_ref", TanhOp());
}

}  // namespace cpu_dense
}  // namespace minnow
