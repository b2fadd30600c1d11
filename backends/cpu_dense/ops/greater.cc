// Greater: a > b -> bool, numpy broadcasting; float32 and int64 (shape subgraphs).
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct GreaterOp : BinaryOpBase {
  template <class T>
  uint8_t operator()(T a, T b) const { return a > b; }
};
}  // namespace

double greater_bid(const Node& node) { return binary_bid(node, {MN_F32, MN_I64}); }

std::unique_ptr<Kernel> greater_make(const Node& node) {
  return make_binary<GreaterOp>(node, "f32_greater_ref", "i64_greater_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
