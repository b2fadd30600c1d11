// HardSwish (opset 14): x * max(0, min(1, x / 6 + 1/2)).
#include <algorithm>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct HardSwishOp {
  float operator()(float x) const {
    return x * std::min(1.0f, std::max(0.0f, x * (1.0f / 6.0f) + 0.5f));
  }
};
}  // namespace

double hard_swish_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> hard_swish_make(const Node& node) {
  hard_swish_bid(node);
  return make_unary<float>(node, "f32_hard_swish_ref", HardSwishOp());
}

}  // namespace cpu_dense
}  // namespace minnow
