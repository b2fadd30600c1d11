// Equal: a == b -> bool, numpy broadcasting; float32 and int64 (shape subgraphs).
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct EqualOp : BinaryOpBase {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a == b;
  }
};
}  // namespace

double equal_bid(const Node& node) {
  return binary_bid(node, {MN_F32, MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
}

std::unique_ptr<Kernel> equal_make(const Node& node) {
  equal_bid(node);
  if (auto k = make_binary_other_int<EqualOp>(node, "int_equal_ref")) return k;
  return make_binary<EqualOp>(node, "f32_equal_ref", "i64_equal_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
