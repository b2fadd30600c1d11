// Pad: constant / reflect / edge padding, any element type. pads (begin..., end...) and
// the constant value are attributes before opset 11 and inputs from 11 (opset 18's axes
// input too). Negative pads crop. Each output coordinate maps to an input coordinate per
// dim (or to the constant), see mapped_copy.
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class PadKernel final : public OpKernel {
 public:
  explicit PadKernel(const Node& node)
      : OpKernel(node, "pad_ref"),
        input_form_(node.op_version() >= 11),
        mode_(node.attr_string("mode", "constant")),
        pads_(node.attr_ints(node.op_version() < 2 ? "paddings" : "pads")),
        value_(node.attr_float("value", 0.0f)) {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) / 4.0;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    const Dims xd = Dims::of(in[0]);
    const int r = xd.rank;
    std::vector<int64_t> pads = pads_;
    uint64_t fill = 0;  // the constant's bytes (zero is 0 for every type)
    const size_t es = plugin::dtype_size(in[0].dtype);
    if (input_form_) {
      if (num_inputs < 2) fail("pads missing at run time");
      pads = read_ints(*this, in[1], "pads");
      if (num_inputs > 2 && present(in[2]) && numel(in[2]) > 0) {
        check_dtype(in[2], in[0].dtype, "constant_value");
        std::memcpy(&fill, in[2].data, es);
      }
      if (num_inputs > 3 && present(in[3])) {  // axes: pads name only these dims
        const std::vector<int64_t> axes = read_ints(*this, in[3], "axes");
        if (pads.size() != 2 * axes.size()) fail("pads and axes differ in length");
        std::vector<int64_t> full(2 * r, 0);
        for (size_t i = 0; i < axes.size(); ++i) {
          if (axes[i] < -r || axes[i] >= r) fail("axis out of range");
          const int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
          full[a] = pads[i];
          full[a + r] = pads[i + axes.size()];
        }
        pads = full;
      }
    } else {
      if (in[0].dtype != MN_F32) fail("the value attribute pads float32 only");
      std::memcpy(&fill, &value_, sizeof(float));
    }
    if (static_cast<int>(pads.size()) != 2 * r)
      fail("pads has " + std::to_string(pads.size()) + " entries for rank " + std::to_string(r));
    Dims od = xd;
    std::vector<std::vector<int64_t>> map(r);
    for (int i = 0; i < r; ++i) {
      const int64_t d = xd[i], pre = pads[i];
      od[i] = d + pre + pads[i + r];
      if (od[i] < 0) fail("pads crop dimension " + std::to_string(i) + " below zero");
      if (od[i] > 0 && d == 0 && mode_ != "constant")
        fail("cannot " + mode_ + "-pad an empty dimension");
      if (mode_ == "reflect" && d > 0 && (pre > d - 1 || pads[i + r] > d - 1) && d > 1)
        fail("reflect pads must be smaller than the dimension");
      map[i].resize(static_cast<size_t>(od[i]));
      for (int64_t o = 0; o < od[i]; ++o) {
        int64_t s = o - pre;
        if (s < 0 || s >= d) {
          if (mode_ == "edge") {
            s = s < 0 ? 0 : d - 1;
          } else if (mode_ == "reflect") {
            s = d == 1 ? 0 : (s < 0 ? -s : 2 * (d - 1) - s);
          } else {
            s = -1;
          }
        }
        map[i][o] = s;
      }
    }
    check_output(out, num_outputs, 0, in[0].dtype, od);
    mapped_copy(*this, ctx, in[0].dtype, xd, od, map, in[0].data, out[0].data, &fill);
  }

 private:
  bool input_form_;
  std::string mode_;
  std::vector<int64_t> pads_;
  float value_;
};

}  // namespace

double pad_bid(const Node& node) {
  const bool inputs = node.op_version() >= 11;
  require_inputs(node, inputs ? 2 : 1, inputs ? 4 : 1);
  require_movable(node, node.input(0).dtype());
  if (inputs) {
    require_input_dtype(node, 1, {MN_I64});
    if (node.num_inputs() > 2 && node.has_input(2)) require_same_dtype(node, 0, 2);
  } else if (node.input(0).dtype() != MN_F32) {
    node.fail("Pad before opset 11 pads float32 only", MN_ERR_UNSUPPORTED);
  }
  const std::string mode = node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    node.fail("unknown mode '" + mode + "'", MN_ERR_UNSUPPORTED);
  return numel_estimate(*node.output(0).t) / 4.0;
}

std::unique_ptr<Kernel> pad_make(const Node& node) {
  pad_bid(node);
  return std::make_unique<PadKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
