// Max: element-wise maximum of any number of inputs, broadcast together (opset 8+;
// same shapes before). A NaN operand gives NaN, as numpy.maximum.
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct MaxOp : BinaryOpBase {
  template <class T>
  T operator()(T a, T b) const { return (a > b || is_nan(a)) ? a : b; }
};
}  // namespace

double max_bid(const Node& node) { return variadic_bid(node, {MN_F32, MN_I64}); }

std::unique_ptr<Kernel> max_make(const Node& node) {
  return make_variadic<MaxOp>(node, "f32_max_ref", "i64_max_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
