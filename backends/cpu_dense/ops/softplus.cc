// Softplus: log(1 + exp(x)), as max(x, 0) + log1p(exp(-|x|)) so large |x| neither
// overflows nor loses the answer.
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct SoftplusOp {
  float operator()(float x) const {
    return std::max(x, 0.0f) + std::log1p(std::exp(-std::fabs(x)));
  }
};
}  // namespace

double softplus_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> softplus_make(const Node& node) {
  softplus_bid(node);
  return make_unary<float>(node, "f32_softplus_ref", SoftplusOp());
}

}  // namespace cpu_dense
}  // namespace minnow
