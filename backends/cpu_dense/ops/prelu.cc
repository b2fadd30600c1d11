// PRelu: x < 0 ? slope * x : x, slope broadcast (unidirectionally) to x. Opset < 7 had no
// broadcasting rule; there a 1-D slope of C values is per channel (dim 1), which is what
// such models mean. The output has x's shape, so it may alias x.
#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

struct PReluOp {
  float operator()(float x, float s) const { return x < 0.0f ? s * x : x; }
};

class PReluKernel final : public OpKernel {
 public:
  explicit PReluKernel(const Node& node)
      : OpKernel(node, "f32_prelu_ref"), legacy_(node.op_version() < 7) {}

  int inplace_input() const override { return 0; }
  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 2) fail("inputs missing at run time");
    check_dtype(in[0], MN_F32, "X");
    check_dtype(in[1], MN_F32, "slope");
    const Dims dx = Dims::of(in[0]);
    Dims ds = Dims::of(in[1]);
    if (legacy_ && ds.rank == 1 && dx.rank >= 2 && ds[0] == dx[1] && !broadcasts_to(ds, dx)) {
      for (int i = 2; i < dx.rank; ++i) ds[ds.rank++] = 1;  // (C) -> (C, 1, ...)
    }
    if (!broadcasts_to(ds, dx))
      fail("slope " + shape_str(in[1]) + " does not broadcast to X " + shape_str(in[0]));
    check_output(out, num_outputs, 0, MN_F32, dx);
    broadcast_apply(ctx, PReluOp(), static_cast<const float*>(in[0].data), dx,
                    static_cast<const float*>(in[1].data), ds, static_cast<float*>(out[0].data),
                    dx);
  }

 private:
  bool legacy_;
};

}  // namespace

double prelu_bid(const Node& node) {
  require_inputs(node, 2, 2);
  require_input_dtype(node, 0, {MN_F32});
  require_input_dtype(node, 1, {MN_F32});
  return numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> prelu_make(const Node& node) {
  prelu_bid(node);
  return std::make_unique<PReluKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
