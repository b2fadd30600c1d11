// Sqrt: square root (NaN below 0, as std::sqrt).
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct SqrtOp {
  float operator()(float x) const { return std::sqrt(x); }
};
}  // namespace

double sqrt_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> sqrt_make(const Node& node) {
  sqrt_bid(node);
  return make_unary<float>(node, "f32_sqrt_ref", SqrtOp());
}

}  // namespace cpu_dense
}  // namespace minnow
