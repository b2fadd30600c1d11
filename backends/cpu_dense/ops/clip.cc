// Clip: min(max(x, lo), hi), one kernel templated over the element type.
// float32: bounds are attributes before opset 11 and optional scalar inputs from 11 on.
// Integer types (opset 12 allows every numeric type): optional scalar inputs of the input's
// type. Inputs are read at run time (they may be computed); an absent bound is the type's
// limit. With lo > hi every element becomes hi, as the spec says.
#include <limits>

#include "../binary.h"
#include "../ops.h"
#include "../kernels/eltwise.h"

namespace minnow {
namespace cpu_dense {

namespace {

template <class T>
class ClipKernel final : public OpKernel {
 public:
  // `lo` / `hi`: the bounds when they are not inputs (float32 before opset 11), otherwise
  // the type's limits, replaced by whichever bound inputs are present.
  ClipKernel(const Node& node, const char* name, int32_t dt, bool bounds_as_inputs, T lo, T hi)
      : OpKernel(node, name), dt_(dt), bounds_as_inputs_(bounds_as_inputs), lo_(lo), hi_(hi) {}

  int inplace_input() const override { return 0; }
  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 2.0 * static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], dt_, "input");
    const Dims d = Dims::of(in[0]);
    check_output(out, num_outputs, 0, dt_, d);
    T lo = lo_, hi = hi_;
    if (bounds_as_inputs_) {
      if (num_inputs > 1 && present(in[1])) lo = scalar(in[1], "min");
      if (num_inputs > 2 && present(in[2])) hi = scalar(in[2], "max");
    }
    const T* x = static_cast<const T*>(in[0].data);
    T* y = static_cast<T*>(out[0].data);
    auto body = [&](size_t b, size_t e) {
      if constexpr (std::is_same<T, float>::value) {
        kernels::f32_clip(x + b, y + b, static_cast<int64_t>(e - b), lo, hi);
        return;
      }
      for (size_t i = b; i < e; ++i) {
        const T v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
      }
    };
    ctx.parallel_for(static_cast<size_t>(d.numel()), kElementwiseGrain, std::move(body));
  }

 private:
  T scalar(const mn_tensor& t, const char* what) const {
    check_dtype(t, dt_, what);
    if (numel(t) != 1) fail(std::string(what) + " must be a scalar, got " + shape_str(t));
    return *static_cast<const T*>(t.data);
  }

  int32_t dt_;
  bool bounds_as_inputs_;
  T lo_, hi_;
};

template <class T>
std::unique_ptr<Kernel> make_clip(const Node& node, const char* name, int32_t dt) {
  return std::make_unique<ClipKernel<T>>(node, name, dt, true, std::numeric_limits<T>::lowest(),
                                         std::numeric_limits<T>::max());
}

bool is_float_clip(const Node& node) {
  return !(node.num_inputs() > 0 && node.has_input(0) && node.input(0).dtype() != MN_F32);
}

}  // namespace

double clip_bid(const Node& node) {
  if (!is_float_clip(node)) {
    if (node.op_version() < 12) node.fail("integer Clip needs opset 12", MN_ERR_UNSUPPORTED);
    require_inputs(node, 1, 3);
    require_input_dtype(node, 0, {MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
    for (int i = 1; i < node.num_inputs(); ++i)
      if (node.has_input(i)) require_same_dtype(node, 0, i);
    return 2.0 * numel_estimate(*node.input(0).t);
  }
  const bool inputs = node.op_version() >= 11;
  require_inputs(node, 1, inputs ? 3 : 1);
  require_input_dtype(node, 0, {MN_F32});
  for (int i = 1; i < node.num_inputs(); ++i) {
    if (!node.has_input(i)) continue;
    require_input_dtype(node, i, {MN_F32});
    const mn_tensor& t = *node.input(i).t;
    if (TensorRef{&t}.shape_known() && numel(t) != 1)
      node.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got " + shape_str(t));
  }
  return 2.0 * numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> clip_make(const Node& node) {
  clip_bid(node);
  const int32_t dt = node.input(0).dtype();
  if (!is_float_clip(node)) {
    if (dt == MN_I64) return make_clip<int64_t>(node, "int_clip_ref", dt);
    std::unique_ptr<Kernel> k;
    with_other_int(dt, [&](auto t) { k = make_clip<decltype(t)>(node, "int_clip_ref", dt); });
    return k;
  }
  if (node.op_version() >= 11) return make_clip<float>(node, "f32_clip__hwy", MN_F32);
  return std::make_unique<ClipKernel<float>>(
      node, "f32_clip__hwy", MN_F32, false,
      node.attr_float("min", std::numeric_limits<float>::lowest()),
      node.attr_float("max", std::numeric_limits<float>::max()));
}

}  // namespace cpu_dense
}  // namespace minnow
