// Div: a / b with numpy broadcasting (legacy broadcast/axis before opset 7); float32 (IEEE:
// x/0 is inf or NaN) and int64 (truncating, as C and onnxruntime; a zero divisor is an
// error, since it has no value).
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct DivOp : BinaryOpBase {
  static constexpr int kF32Kind = static_cast<int>(kernels::BinaryKind::kDiv);
  template <class TB>
  static constexpr bool nonzero_b() {
    return std::is_integral<TB>::value;
  }
  float operator()(float a, float b) const { return a / b; }
  // INT64_MIN / -1 overflows: wrap like the other int64 ops.
  int64_t operator()(int64_t a, int64_t b) const {
    return b == -1 ? wrap_sub(int64_t(0), a) : a / b;
  }
  // The other integer types: truncating too; MIN / -1 wraps for the signed ones.
  template <class T, typename std::enable_if<std::is_integral<T>::value &&
                                                 !std::is_same<T, int64_t>::value,
                                             int>::type = 0>
  T operator()(T a, T b) const {
    if constexpr (std::is_signed<T>::value)
      if (b == T(-1)) return wrap_sub(T(0), a);
    return static_cast<T>(a / b);
  }
};
}  // namespace

double div_bid(const Node& node) {
  return binary_bid(node, {MN_F32, MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
}

std::unique_ptr<Kernel> div_make(const Node& node) {
  div_bid(node);
  if (auto k = make_binary_other_int<DivOp>(node, "int_div_ref")) return k;
  return make_binary<DivOp>(node, "f32_vdiv__hwy", "i64_div_ref");
}

}  // namespace cpu_dense
}  // namespace minnow
