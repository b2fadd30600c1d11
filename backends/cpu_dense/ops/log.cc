// Log: natural logarithm (NaN below 0, -inf at 0, as std::log).
#include <algorithm>
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct LogOp {
  float operator()(float x) const { return std::log(x); }
};
}  // namespace

double log_bid(const Node& node) { return unary_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> log_make(const Node& node) {
  log_bid(node);
  return make_unary<float>(node, "f32_log_ref", LogOp());
}

}  // namespace cpu_dense
}  // namespace minnow
