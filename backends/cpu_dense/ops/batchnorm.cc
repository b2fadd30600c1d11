// BatchNormalization, inference form: y = scale * (x - mean) / sqrt(var + epsilon) + B per
// channel (dim 1). Training outputs (running mean/var, saved stats), training_mode = 1
// (opset 14+) and spatial = 0 (opsets 6-8: per-activation statistics) are refused.
//
// Per (n, c) plane the affine pair a = scale / sqrt(var + eps), b = B - mean * a is formed
// once; parameters are read at run time since they need not be constants.
#include <cmath>

#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class BatchNormKernel final : public OpKernel {
 public:
  BatchNormKernel(const Node& node, float epsilon)
      : OpKernel(node, "f32_batchnorm_ref"), epsilon_(epsilon) {}

  int inplace_input() const override { return 0; }  // element-wise in x
  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 2.0 * static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 5) fail("inputs missing at run time");
    check_dtype(in[0], MN_F32, "X");
    const Dims d = Dims::of(in[0]);
    if (d.rank < 2) fail("X " + shape_str(in[0]) + " must have rank >= 2 (N, C, ...)");
    const int64_t C = d[1];
    static const char* const names[] = {"X", "scale", "B", "mean", "var"};
    for (int i = 1; i < 5; ++i) {
      check_dtype(in[i], MN_F32, names[i]);
      if (in[i].rank != 1 || in[i].dims[0] != C)
        fail(std::string(names[i]) + " " + shape_str(in[i]) + " must be [" + std::to_string(C) +
             "]");
    }
    check_output(out, num_outputs, 0, MN_F32, d);
    const float* x = static_cast<const float*>(in[0].data);
    const float* scale = static_cast<const float*>(in[1].data);
    const float* bias = static_cast<const float*>(in[2].data);
    const float* mean = static_cast<const float*>(in[3].data);
    const float* var = static_cast<const float*>(in[4].data);
    float* y = static_cast<float*>(out[0].data);
    const int64_t plane = d.prod(2, d.rank);
    const float eps = epsilon_;
    auto body = [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        const int64_t c = static_cast<int64_t>(r) % C;
        const float a = scale[c] / std::sqrt(var[c] + eps);
        const float b = bias[c] - mean[c] * a;
        const float* xp = x + r * plane;
        float* yp = y + r * plane;
        for (int64_t i = 0; i < plane; ++i) yp[i] = xp[i] * a + b;
      }
    };
    ctx.parallel_for(static_cast<size_t>(d[0] * C), grain_for(2.0 * plane), std::move(body));
  }

 private:
  float epsilon_;
};

}  // namespace

double batchnorm_bid(const Node& node) {
  require_inputs(node, 5, 5);
  for (int i = 0; i < 5; ++i) require_input_dtype(node, i, {MN_F32});
  for (int i = 1; i < node.num_outputs(); ++i)
    if (present(*node.output(i).t))
      node.fail("training outputs (running / saved statistics) are not supported",
                MN_ERR_UNSUPPORTED);
  if (node.attr_int("training_mode", 0) != 0)
    node.fail("training_mode = 1 is not supported", MN_ERR_UNSUPPORTED);
  if (node.op_version() < 9 && node.attr_int("spatial", 1) == 0)
    node.fail("spatial = 0 is not supported", MN_ERR_UNSUPPORTED);
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x) && x.rank < 2) node.fail("X " + shape_str(x) + " must have rank >= 2");
  for (int i = 1; i < 5; ++i) {
    const mn_tensor& p = *node.input(i).t;
    if (rank_known(p) &&
        (p.rank != 1 || (dim_known(p, 0) && dim_known(x, 1) && p.dims[0] != x.dims[1])))
      node.fail("input " + std::to_string(i) + " " + shape_str(p) + " must be [C] for X " +
                shape_str(x));
  }
  return 2.0 * numel_estimate(x);
}

std::unique_ptr<Kernel> batchnorm_make(const Node& node) {
  batchnorm_bid(node);
  return std::make_unique<BatchNormKernel>(node, node.attr_float("epsilon", 1e-5f));
}

}  // namespace cpu_dense
}  // namespace minnow
