// InstanceNormalization: per (n, c) over the spatial dims, y = scale[c] * (x - mean) /
// sqrt(var + epsilon) + B[c] (biased variance), float32. Mean and variance are
// accumulated in double over the (possibly long) spatial extent.
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class InstanceNormKernel final : public OpKernel {
 public:
  InstanceNormKernel(const Node& node)
      : OpKernel(node, "f32_instance_norm_ref"), eps_(node.attr_float("epsilon", 1e-5f)) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 4.0 * static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 3) fail("inputs missing at run time");
    for (int i = 0; i < 3; ++i) check_dtype(in[i], MN_F32, i == 0 ? "input" : "scale/B");
    const Dims d = Dims::of(in[0]);
    if (d.rank < 2) fail("input must have rank >= 2, got " + shape_str(in[0]));
    const int64_t n = d[0], c = d[1], s = d.prod(2, d.rank);
    if (numel(in[1]) != c || numel(in[2]) != c)
      fail("scale " + shape_str(in[1]) + " / B " + shape_str(in[2]) + " do not match " +
           std::to_string(c) + " channels");
    check_output(out, num_outputs, 0, MN_F32, d);
    const float* x = static_cast<const float*>(in[0].data);
    const float* sc = static_cast<const float*>(in[1].data);
    const float* bb = static_cast<const float*>(in[2].data);
    float* y = static_cast<float*>(out[0].data);
    auto body = [&](size_t b, size_t e) {
      for (size_t p = b; p < e; ++p) {
        const float* xp = x + p * s;
        float* yp = y + p * s;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < s; ++i) mean += xp[i];
        mean /= static_cast<double>(s ? s : 1);
        for (int64_t i = 0; i < s; ++i) var += (xp[i] - mean) * (xp[i] - mean);
        var /= static_cast<double>(s ? s : 1);
        const int64_t ch = static_cast<int64_t>(p) % c;
        const double k = sc[ch] / std::sqrt(var + eps_);
        for (int64_t i = 0; i < s; ++i) yp[i] = static_cast<float>((xp[i] - mean) * k + bb[ch]);
      }
    };
    ctx.parallel_for(static_cast<size_t>(n * c), grain_for(4.0 * static_cast<double>(s)),
                     std::move(body));
  }

 private:
  float eps_;
};

}  // namespace

double instance_norm_bid(const Node& node) {
  require_inputs(node, 3, 3);
  for (int i = 0; i < 3; ++i) require_input_dtype(node, i, {MN_F32});
  return 4.0 * numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> instance_norm_make(const Node& node) {
  instance_norm_bid(node);
  return std::make_unique<InstanceNormKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
