// Add: y = a + b with numpy broadcasting (legacy broadcast/axis before opset 7); float32
// and int64 (shape arithmetic).
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct AddOp : BinaryOpBase {
  static constexpr int kF32Kind = static_cast<int>(kernels::BinaryKind::kAdd);
  template <class T>
  T operator()(T a, T b) const {
    return wrap_add(a, b);
  }
};
}  // namespace

double add_bid(const Node& node) {
  return binary_bid(node, {MN_F32, MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
}

std::unique_ptr<Kernel> add_make(const Node& node) {
  add_bid(node);
  if (auto k = make_binary_other_int<AddOp>(node, "int_add_ref")) return k;
  return make_binary<AddOp>(node, "f32_vadd__hwy", "i64_add_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
