// Expand: broadcasts the input to the (numpy-broadcast of its shape and the) shape input,
// any element type: a strided read with stride 0 on broadcast dims.
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class ExpandKernel final : public OpKernel {
 public:
  explicit ExpandKernel(const Node& node) : OpKernel(node, "expand_ref") {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) / 8.0;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 2) fail("inputs missing at run time");
    const std::vector<int64_t> s = read_ints(*this, in[1], "shape");
    if (s.size() > MN_MAX_RANK) fail("shape is longer than the maximum rank");
    Dims target, xd = Dims::of(in[0]), od;
    for (int64_t v : s) {
      if (v < 0) fail("negative dimension " + std::to_string(v));
      target[target.rank++] = v;
    }
    if (!broadcast_dims(xd, target, &od))
      fail("cannot expand " + shape_str(in[0]) + " to " + target.str());
    check_output(out, num_outputs, 0, in[0].dtype, od);
    int64_t strides[MN_MAX_RANK];
    broadcast_strides(xd, od, strides);
    strided_copy_any(*this, ctx, in[0].dtype, od, strides, in[0].data, 0, out[0].data);
  }
};

}  // namespace

double expand_bid(const Node& node) {
  require_inputs(node, 2, 2);
  require_movable(node, node.input(0).dtype());
  require_input_dtype(node, 1, {MN_I64});
  return numel_estimate(*node.output(0).t) / 8.0;
}

std::unique_ptr<Kernel> expand_make(const Node& node) {
  expand_bid(node);
  return std::make_unique<ExpandKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
