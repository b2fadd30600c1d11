// LRN (local response normalisation across channels), float32:
// y = x / (bias + alpha / size * sum_{c' in window(c)} x[c']^2) ^ beta, the window being
// [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the channels.
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class LrnKernel final : public OpKernel {
 public:
  explicit LrnKernel(const Node& node)
      : OpKernel(node, "f32_lrn_ref"),
        alpha_(node.attr_float("alpha", 1e-4f)),
        beta_(node.attr_float("beta", 0.75f)),
        bias_(node.attr_float("bias", 1.0f)),
        size_(node.attr_int("size", 0)) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0])) * (2.0 * size_ + 4.0);
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], MN_F32, "input");
    const Dims d = Dims::of(in[0]);
    if (d.rank < 2) fail("input must have rank >= 2, got " + shape_str(in[0]));
    check_output(out, num_outputs, 0, MN_F32, d);
    const int64_t n = d[0], c = d[1], s = d.prod(2, d.rank);
    const int64_t lo_off = (size_ - 1) / 2, hi_off = size_ - 1 - lo_off;
    const float* x = static_cast<const float*>(in[0].data);
    float* y = static_cast<float*>(out[0].data);
    auto body = [&](size_t b, size_t e) {
      for (size_t p = b; p < e; ++p) {  // p = (batch, channel)
        const int64_t bi = static_cast<int64_t>(p) / c, ch = static_cast<int64_t>(p) % c;
        const int64_t c0 = std::max<int64_t>(0, ch - lo_off), c1 = std::min(c - 1, ch + hi_off);
        for (int64_t i = 0; i < s; ++i) {
          double sq = 0;
          for (int64_t k = c0; k <= c1; ++k) {
            const double v = x[(bi * c + k) * s + i];
            sq += v * v;
          }
          const double den = std::pow(bias_ + alpha_ / static_cast<double>(size_) * sq, beta_);
          y[p * s + i] = static_cast<float>(x[p * s + i] / den);
        }
      }
    };
    ctx.parallel_for(static_cast<size_t>(n * c), grain_for(static_cast<double>(s * size_)),
                     std::move(body));
  }

 private:
  float alpha_, beta_, bias_;
  int64_t size_;
};

}  // namespace

double lrn_bid(const Node& node) {
  require_inputs(node, 1, 1);
  require_input_dtype(node, 0, {MN_F32});
  if (node.attr_int("size", 0) < 1) node.fail("attribute size must be >= 1");
  return numel_estimate(*node.input(0).t) * (2.0 * node.attr_int("size", 1) + 4.0);
}

std::unique_ptr<Kernel> lrn_make(const Node& node) {
  lrn_bid(node);
  return std::make_unique<LrnKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
