// Sum: element-wise sum of any number of inputs, broadcast together (opset 8+; same
// shapes before). float32 only, as ONNX.
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct SumOp : BinaryOpBase {
  template <class T>
  T operator()(T a, T b) const {
    return wrap_add(a, b);
  }
};
}  // namespace

double sum_bid(const Node& node) { return variadic_bid(node, {MN_F32}); }

std::unique_ptr<Kernel> sum_make(const Node& node) {
  return make_variadic<SumOp>(node, "f32_sum_ref", nullptr);
}

}  // namespace cpu_dense
}  // namespace minnow
