// ReduceMean / ReduceMax / ReduceSum over float32 and int64 (one file: the three differ
// only in the accumulate/finish step). Axes from the attribute, or from input 1 for
// ReduceSum >= 13; keepdims (default 1); noop_with_empty_axes (>= 13) makes empty axes
// an identity instead of "reduce everything".
#include <limits>

#include "../ops.h"
#include "../reduce.h"

namespace minnow {
namespace cpu_dense {

namespace {

enum class ReduceKind { kMean, kMax, kSum };

template <class T>
class ReduceKernel final : public OpKernel {
 public:
  ReduceKernel(const Node& node, ReduceKind kind, bool input_form)
      : OpKernel(node, "reduce_ref"),
        kind_(kind),
        input_form_(input_form),
        axes_(node.attr_ints("axes")),
        keepdims_(node.attr_int("keepdims", 1) != 0),
        noop_(node.attr_int("noop_with_empty_axes", 0) != 0) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0]));
  }

  void run(const RunContext&, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    constexpr int32_t dt = DtypeOf<T>::value;
    check_dtype(in[0], dt, "input");
    const Dims xd = Dims::of(in[0]);
    const ReducePlan p =
        plan_reduce(*this, xd, reduce_axes(*this, input_form_, axes_, in, num_inputs), keepdims_,
                    noop_);
    check_output(out, num_outputs, 0, dt, p.out);
    const T* x = static_cast<const T*>(in[0].data);
    T* y = static_cast<T*>(out[0].data);
    const int64_t on = p.out.numel();
    if (p.identity) {
      std::memcpy(y, x, static_cast<size_t>(on) * sizeof(T));
      return;
    }
    if (kind_ == ReduceKind::kMax && p.count == 0) fail("ReduceMax over an empty set");
    // Accumulate in double (float) / int64 so long sums lose less.
    using Acc = typename std::conditional<std::is_floating_point<T>::value, double, int64_t>::type;
    std::vector<Acc> acc(static_cast<size_t>(on),
                         kind_ == ReduceKind::kMax ? std::numeric_limits<Acc>::lowest() : Acc(0));
    std::vector<bool> nan(static_cast<size_t>(on), false);
    for_each_reduced(xd, p, [&](int64_t i, int64_t o) {
      const Acc v = static_cast<Acc>(x[i]);
      if (kind_ == ReduceKind::kMax) {
        if (is_nan(x[i])) nan[o] = true;  // max with NaN is NaN, as numpy
        else if (v > acc[o]) acc[o] = v;
      } else {
        acc[o] += v;
      }
    });
    for (int64_t o = 0; o < on; ++o) {
      Acc v = acc[o];
      if (kind_ == ReduceKind::kMean) v = p.count ? v / static_cast<Acc>(p.count) : v;
      y[o] = nan[o] ? static_cast<T>(NAN) : static_cast<T>(v);
    }
  }

 private:
  ReduceKind kind_;
  bool input_form_;
  std::vector<int64_t> axes_;
  bool keepdims_, noop_;
};

double reduce_bid(const Node& node, bool input_form) {
  require_inputs(node, 1, input_form ? 2 : 1);
  require_input_dtype(node, 0, {MN_F32, MN_I64});
  if (input_form && node.num_inputs() > 1 && node.has_input(1))
    require_input_dtype(node, 1, {MN_I64});
  return numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> reduce_make(const Node& node, ReduceKind kind, bool input_form) {
  reduce_bid(node, input_form);
  if (node.input(0).dtype() == MN_I64)
    return std::make_unique<ReduceKernel<int64_t>>(node, kind, input_form);
  return std::make_unique<ReduceKernel<float>>(node, kind, input_form);
}

bool sum_axes_input(const Node& node) { return node.op_version() >= 13; }

}  // namespace

double reduce_mean_bid(const Node& node) { return reduce_bid(node, false); }
std::unique_ptr<Kernel> reduce_mean_make(const Node& node) {
  return reduce_make(node, ReduceKind::kMean, false);
}
double reduce_max_bid(const Node& node) { return reduce_bid(node, false); }
std::unique_ptr<Kernel> reduce_max_make(const Node& node) {
  return reduce_make(node, ReduceKind::kMax, false);
}
double reduce_sum_bid(const Node& node) { return reduce_bid(node, sum_axes_input(node)); }
std::unique_ptr<Kernel> reduce_sum_make(const Node& node) {
  return reduce_make(node, ReduceKind::kSum, sum_axes_input(node));
}

}  // namespace cpu_dense
}  // namespace minnow
