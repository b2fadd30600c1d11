// Neg: -x; float32 and int64 (int64 wraps for INT64_MIN instead of overflowing).
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct NegOp {
  float operator()(float x) const { return -x; }
  int64_t operator()(int64_t x) const { return wrap_sub(int64_t(0), x); }
};
}  // namespace

double neg_bid(const Node& node) { return unary_bid(node, {MN_F32, MN_I64}); }

std::unique_ptr<Kernel> neg_make(const Node& node) {
  neg_bid(node);
  if (node.input(0).dtype() == MN_I64) return make_unary<int64_t>(node, "i64_neg_ref", NegOp());
  return make_unary<float>(node, "f32_neg_ref", NegOp());
}

}  // namespace cpu_dense
}  // namespace minnow
