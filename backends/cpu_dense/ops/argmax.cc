// ArgMax: index (int64) of the largest element along `axis`; keepdims (default 1);
// select_last_index (>= 12) picks the last of equal maxima instead of the first.
// float32 and int64 inputs.
#include "../ops.h"
#include "../reduce.h"

namespace minnow {
namespace cpu_dense {

namespace {

template <class T>
class ArgMaxKernel final : public OpKernel {
 public:
  explicit ArgMaxKernel(const Node& node)
      : OpKernel(node, "argmax_ref"),
        axis_(node.attr_int("axis", 0)),
        keepdims_(node.attr_int("keepdims", 1) != 0),
        last_(node.attr_int("select_last_index", 0) != 0) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0]));
  }

  void run(const RunContext&, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], DtypeOf<T>::value, "input");
    const Dims xd = Dims::of(in[0]);
    const ReducePlan p = plan_reduce(*this, xd, {axis_}, keepdims_, false);
    check_output(out, num_outputs, 0, MN_I64, p.out);
    const int a = static_cast<int>(axis_ < 0 ? axis_ + xd.rank : axis_);
    const int64_t outer = xd.prod(0, a), d = xd[a], inner = xd.prod(a + 1, xd.rank);
    if (d == 0 && outer * inner > 0) fail("ArgMax over an empty axis");
    const T* x = static_cast<const T*>(in[0].data);
    int64_t* y = static_cast<int64_t*>(out[0].data);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = x + o * d * inner + i;
        int64_t best = 0;
        for (int64_t j = 1; j < d; ++j) {
          const T v = row[j * inner], b = row[best * inner];
          if (last_ ? v >= b : v > b) best = j;
        }
        y[o * inner + i] = best;
      }
  }

 private:
  int64_t axis_;
  bool keepdims_, last_;
};

}  // namespace

double argmax_bid(const Node& node) {
  require_inputs(node, 1, 1);
  require_input_dtype(node, 0, {MN_F32, MN_I64});
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x)) normalize_axis(node, node.attr_int("axis", 0), x.rank);
  return numel_estimate(x);
}

std::unique_ptr<Kernel> argmax_make(const Node& node) {
  argmax_bid(node);
  if (node.input(0).dtype() == MN_I64) return std::make_unique<ArgMaxKernel<int64_t>>(node);
  return std::make_unique<ArgMaxKernel<float>>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
