// Abs: |x|; float32 and int64 (|INT64_MIN| wraps to itself instead of overflowing).
#include <cmath>

#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct AbsOp {
  float operator()(float x) const { return std::fabs(x); }
  int64_t operator()(int64_t x) const { return x < 0 ? wrap_sub(int64_t(0), x) : x; }
};
}  // namespace

double abs_bid(const Node& node) { return unary_bid(node, {MN_F32, MN_I64}); }

std::unique_ptr<Kernel> abs_make(const Node& node) {
  abs_bid(node);
  if (node.input(0).dtype() == MN_I64) return make_unary<int64_t>(node, "i64_abs_ref", AbsOp());
  return make_unary<float>(node, "f32_abs_ref", AbsOp());
}

}  // namespace cpu_dense
}  // namespace minnow
