// Slice: starts/ends/axes/steps as attributes (opset < 10) or int32/int64 inputs (>= 10),
// any element type. Indices are clamped as ONNX specifies (negative counts from the end;
// negative steps walk backwards); the copy is a strided read (possibly negative strides)
// from the first selected element.
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class SliceKernel final : public OpKernel {
 public:
  explicit SliceKernel(const Node& node)
      : OpKernel(node, "slice_ref"),
        attr_form_(node.op_version() < 10),
        starts_(node.attr_ints("starts")),
        ends_(node.attr_ints("ends")),
        axes_(node.attr_ints("axes")) {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) / 8.0;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    const Dims xd = Dims::of(in[0]);
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (!attr_form_) {
      if (num_inputs < 3) fail("starts or ends missing at run time");
      starts = read_ints(*this, in[1], "starts");
      ends = read_ints(*this, in[2], "ends");
      axes.clear();
      if (num_inputs > 3 && present(in[3])) axes = read_ints(*this, in[3], "axes");
      if (num_inputs > 4 && present(in[4])) steps = read_ints(*this, in[4], "steps");
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
      fail("starts, ends, axes and steps differ in length");
    int64_t xs[MN_MAX_RANK], strides[MN_MAX_RANK];
    dense_strides(xd, xs);
    Dims od = xd;
    int64_t base = 0;
    bool seen[MN_MAX_RANK] = {false};
    for (int i = 0; i < xd.rank; ++i) strides[i] = xs[i];
    for (size_t i = 0; i < starts.size(); ++i) {
      if (axes[i] < -xd.rank || axes[i] >= xd.rank)
        fail("axis " + std::to_string(axes[i]) + " out of range for " + shape_str(in[0]));
      const int a = static_cast<int>(axes[i] < 0 ? axes[i] + xd.rank : axes[i]);
      if (seen[a]) fail("axis " + std::to_string(axes[i]) + " repeats");
      seen[a] = true;
      const int64_t d = xd[a], st = steps[i];
      if (st == 0) fail("step is 0");
      // Clamp before adding `d`: starts/ends are often INT64_MIN/MAX ("to the end").
      int64_t b = std::clamp<int64_t>(starts[i], -d - 1, d + 1);
      int64_t e = std::clamp<int64_t>(ends[i], -d - 1, d + 1);
      if (b < 0) b += d;
      if (e < 0) e += d;
      int64_t count;
      if (st > 0) {
        b = std::clamp<int64_t>(b, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
        count = e > b ? (e - b + st - 1) / st : 0;
      } else {
        b = std::clamp<int64_t>(b, 0, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
        count = b > e ? (b - e - st - 1) / -st : 0;
      }
      od[a] = count;
      if (count > 0) base += b * xs[a];
      strides[a] = xs[a] * st;
    }
    check_output(out, num_outputs, 0, in[0].dtype, od);
    strided_copy_any(*this, ctx, in[0].dtype, od, strides, in[0].data, base, out[0].data);
  }

 private:
  bool attr_form_;
  std::vector<int64_t> starts_, ends_, axes_;
};

}  // namespace

double slice_bid(const Node& node) {
  const bool inputs = node.op_version() >= 10;
  require_inputs(node, inputs ? 3 : 1, inputs ? 5 : 1);
  require_movable(node, node.input(0).dtype());
  if (inputs) {
    for (int i = 1; i < node.num_inputs(); ++i)
      if (node.has_input(i)) require_input_dtype(node, i, {MN_I64, MN_I32});
  } else if (!node.has_attr("starts") || !node.has_attr("ends")) {
    node.fail("attributes starts and ends are required");
  }
  return numel_estimate(*node.output(0).t) / 8.0;
}

std::unique_ptr<Kernel> slice_make(const Node& node) {
  slice_bid(node);
  return std::make_unique<SliceKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
