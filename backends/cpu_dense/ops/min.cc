// Min: element-wise minimum of any number of inputs, broadcast together (opset 8+;
// same shapes before). A NaN operand gives NaN, as numpy.minimum.
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct MinOp : BinaryOpBase {
  template <class T>
  T operator()(T a, T b) const {
    return (a < b || is_nan(a)) ? a : b;
  }
};
}  // namespace

double min_bid(const Node& node) {
  return variadic_bid(node, {MN_F32, MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
}

std::unique_ptr<Kernel> min_make(const Node& node) {
  min_bid(node);
  if (auto k = make_variadic_other_int<MinOp>(node, "int_min_ref")) return k;
  return make_variadic<MinOp>(node, "f32_min_ref", "i64_min_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
