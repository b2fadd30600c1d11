// Pow: a ^ b with numpy broadcasting (legacy broadcast/axis before opset 7). Base float32;
// exponent float32, or int64 (opset 12+ lets the exponent have its own type).
#include <cmath>

#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct PowOp : BinaryOpBase {
  float operator()(float a, float b) const { return std::pow(a, b); }
  float operator()(float a, int64_t b) const { return std::pow(a, static_cast<float>(b)); }
};
}  // namespace

double pow_bid(const Node& node) {
  require_inputs(node, 2, 2);
  require_input_dtype(node, 0, {MN_F32});
  require_input_dtype(node, 1, {MN_F32, MN_I64});
  const TensorRef a = node.input(0), b = node.input(1);
  if (a.shape_known() && b.shape_known()) {
    Dims da = Dims::of(*a.t), db = Dims::of(*b.t), o;
    if (!LegacyBroadcast::parse(node).apply(da, &db) || !broadcast_dims(da, db, &o))
      node.fail("shapes " + shape_str(*a.t) + " and " + shape_str(*b.t) + " are not broadcastable");
  }
  return 10.0 * numel_estimate(*node.output(0).t);  // pow is a few exp/log
}

std::unique_ptr<Kernel> pow_make(const Node& node) {
  pow_bid(node);
  if (node.input(1).dtype() == MN_I64)
    return std::make_unique<BinaryKernel<float, int64_t, PowOp>>(node, "f32_pow_i64_ref", PowOp());
  return std::make_unique<BinaryKernel<float, float, PowOp>>(node, "f32_pow_ref", PowOp());
}

}  // namespace cpu_dense
}  // namespace minnow
