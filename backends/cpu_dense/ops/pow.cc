// Pow: a ^ b with numpy broadcasting (legacy broadcast/axis before opset 7). The output has
// the base's type. Base float32, int32 or int64; since opset 12 the exponent has its own
// type: float32 base with a float32, int32, int64, uint32 or uint64 exponent, an integer
// base with a float32 exponent or one of its own type (the pairs ONNX's tests use).
#include <cmath>

#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct PowOp : BinaryOpBase {
  float operator()(float a, float b) const { return std::pow(a, b); }
  template <class B>
  float operator()(float a, B b) const {
    return std::pow(a, static_cast<float>(b));
  }
  // An integer base: numpy's power in double, then cast back (as ONNX's reference does).
  template <class B>
  int32_t operator()(int32_t a, B b) const {
    return static_cast<int32_t>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
  template <class B>
  int64_t operator()(int64_t a, B b) const {
    return static_cast<int64_t>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
};

template <class A, class B>
std::unique_ptr<Kernel> pow_kernel(const Node& node, const char* name) {
  return std::make_unique<BinaryKernel<A, B, PowOp>>(node, name, PowOp());
}
}  // namespace

double pow_bid(const Node& node) {
  require_inputs(node, 2, 2);
  require_input_dtype(node, 0, {MN_F32, MN_I32, MN_I64});
  const int32_t base = node.input(0).dtype();
  if (base == MN_F32)
    require_input_dtype(node, 1, {MN_F32, MN_I32, MN_I64, MN_U32, MN_U64});
  else
    require_input_dtype(node, 1, {MN_F32, base});
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
  const int32_t base = node.input(0).dtype(), exp = node.input(1).dtype();
  if (base == MN_F32) {
    switch (exp) {
      case MN_I32: return pow_kernel<float, int32_t>(node, "f32_pow_i32_ref");
      case MN_I64: return pow_kernel<float, int64_t>(node, "f32_pow_i64_ref");
      case MN_U32: return pow_kernel<float, uint32_t>(node, "f32_pow_u32_ref");
      case MN_U64: return pow_kernel<float, uint64_t>(node, "f32_pow_u64_ref");
      default: return pow_kernel<float, float>(node, "f32_pow_ref");
    }
  }
  if (base == MN_I32)
    return exp == MN_F32 ? pow_kernel<int32_t, float>(node, "i32_pow_f32_ref")
                         : pow_kernel<int32_t, int32_t>(node, "i32_pow_ref");
  return exp == MN_F32 ? pow_kernel<int64_t, float>(node, "i64_pow_f32_ref")
                       : pow_kernel<int64_t, int64_t>(node, "i64_pow_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
