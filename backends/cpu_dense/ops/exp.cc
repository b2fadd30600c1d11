// Exp: e^x.
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct ExpOp {
  float operator()(float x) const { return std::exp(x); }
};
}  // namespace

double exp_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> exp_make(const Node& node) {
  exp_bid(node);
  return make_unary<float>(node, "f32_exp_ref", ExpOp());
}

}  // namespace cpu_dense
}  // namespace minnow
