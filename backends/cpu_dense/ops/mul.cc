// Mul: a * b with numpy broadcasting (legacy broadcast/axis before opset 7); float32
// and int64.
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct MulOp : BinaryOpBase {
  static constexpr int kF32Kind = static_cast<int>(kernels::BinaryKind::kMul);
  template <class T>
  T operator()(T a, T b) const {
    return wrap_mul(a, b);
  }
};
}  // namespace

double mul_bid(const Node& node) {
  return binary_bid(node, {MN_F32, MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
}

std::unique_ptr<Kernel> mul_make(const Node& node) {
  mul_bid(node);
  if (auto k = make_binary_other_int<MulOp>(node, "int_mul_ref")) return k;
  return make_binary<MulOp>(node, "f32_vmul__hwy", "i64_mul_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
