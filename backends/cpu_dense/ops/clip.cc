// Clip: min(max(x, lo), hi). Bounds are attributes before opset 11 and optional scalar
// inputs from 11 on (read at run time: they may be computed); an absent bound is no bound.
// With lo > hi every element becomes hi, as the spec says.
#include <limits>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {

class ClipKernel final : public OpKernel {
 public:
  ClipKernel(const Node& node, bool bounds_as_inputs, float lo, float hi)
      : OpKernel(node, "f32_clip_ref"), bounds_as_inputs_(bounds_as_inputs), lo_(lo), hi_(hi) {}

  int inplace_input() const override { return 0; }
  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 2.0 * static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], MN_F32, "input");
    const Dims d = Dims::of(in[0]);
    check_output(out, num_outputs, 0, MN_F32, d);
    float lo = lo_, hi = hi_;
    if (bounds_as_inputs_) {
      if (num_inputs > 1 && present(in[1])) lo = scalar(in[1], "min");
      if (num_inputs > 2 && present(in[2])) hi = scalar(in[2], "max");
    }
    const float* x = static_cast<const float*>(in[0].data);
    float* y = static_cast<float*>(out[0].data);
    auto body = [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) {
        const float v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
      }
    };
    ctx.parallel_for(static_cast<size_t>(d.numel()), kElementwiseGrain, std::move(body));
  }

 private:
  float scalar(const mn_tensor& t, const char* what) const {
    check_dtype(t, MN_F32, what);
    if (numel(t) != 1) fail(std::string(what) + " must be a scalar, got " + shape_str(t));
    return *static_cast<const float*>(t.data);
  }

  bool bounds_as_inputs_;
  float lo_, hi_;
};

}  // namespace

double clip_bid(const Node& node) {
  if (node.num_inputs() > 0 && node.has_input(0) && node.input(0).dtype() != MN_F32)
    return clip_int_bid(node);  // integer inputs: clip_int.cc
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
  if (node.num_inputs() > 0 && node.has_input(0) && node.input(0).dtype() != MN_F32)
    return clip_int_make(node);
  clip_bid(node);
  const bool inputs = node.op_version() >= 11;
  const float lo = inputs ? std::numeric_limits<float>::lowest()
                          : node.attr_float("min", std::numeric_limits<float>::lowest());
  const float hi = inputs ? std::numeric_limits<float>::max()
                          : node.attr_float("max", std::numeric_limits<float>::max());
  return std::make_unique<ClipKernel>(node, inputs, lo, hi);
}

}  // namespace cpu_dense
}  // namespace minnow
