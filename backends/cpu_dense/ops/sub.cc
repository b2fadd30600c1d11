// Sub: a - b with numpy broadcasting (legacy broadcast/axis before opset 7); float32
// and int64.
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct SubOp : BinaryOpBase {
  static constexpr int kF32Kind = static_cast<int>(kernels::BinaryKind::kSub);
  template <class T>
  T operator()(T a, T b) const {
    return wrap_sub(a, b);
  }
};
}  // namespace

double sub_bid(const Node& node) {
  return binary_bid(node, {MN_F32, MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
}

std::unique_ptr<Kernel> sub_make(const Node& node) {
  sub_bid(node);
  if (auto k = make_binary_other_int<SubOp>(node, "int_sub_ref")) return k;
  return make_binary<SubOp>(node, "f32_vsub__hwy", "i64_sub_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
