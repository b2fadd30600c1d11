// Greater: a > b -> bool, numpy broadcasting; float32 and int64 (shape subgraphs).
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct GreaterOp : BinaryOpBase {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a > b;
  }
};
}  // namespace

double greater_bid(const Node& node) {
  return binary_bid(node, {MN_F32, MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
}

std::unique_ptr<Kernel> greater_make(const Node& node) {
  greater_bid(node);
  if (auto k = make_binary_other_int<GreaterOp>(node, "int_greater_ref")) return k;
  return make_binary<GreaterOp>(node, "f32_greater_ref", "i64_greater_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
