// Concat: joins inputs along `axis` (any element type). Viewed as (outer, axis.., inner),
// each output row of outer index o is the inputs' rows o laid end to end, so the copy is
// one memcpy per input per row.
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class ConcatKernel final : public OpKernel {
 public:
  ConcatKernel(const Node& node, int64_t axis) : OpKernel(node, "concat_copy_ref"), axis_(axis) {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) * plugin::dtype_size(out[0].dtype) / 8.0;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("inputs missing at run time");
    const int32_t dt = in[0].dtype;
    const size_t es = plugin::dtype_size(dt);
    if (es == 0) fail(std::string("cannot concatenate elements of type ") + dtype_name(dt));
    const int r = in[0].rank;
    if (axis_ < -r || axis_ >= r)
      fail("axis " + std::to_string(axis_) + " out of range for rank " + std::to_string(r));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + r : axis_);
    Dims od = Dims::of(in[0]);
    od[axis] = 0;
    for (int k = 0; k < num_inputs; ++k) {
      check_dtype(in[k], dt, "input");
      bool same = in[k].rank == r;
      for (int i = 0; same && i < r; ++i) same = i == axis || in[k].dims[i] == od[i];
      if (!same)
        fail("input " + std::to_string(k) + " " + shape_str(in[k]) + " does not match input 0 " +
             shape_str(in[0]) + " outside axis " + std::to_string(axis));
      od[axis] += in[k].dims[axis];
    }
    check_output(out, num_outputs, 0, dt, od);
    const int64_t outer = od.prod(0, axis);
    const size_t out_row = static_cast<size_t>(od.prod(axis, r)) * es;
    char* y = static_cast<char*>(out[0].data);
    auto body = [&](size_t o0, size_t o1) {
      for (size_t o = o0; o < o1; ++o) {
        char* dst = y + o * out_row;
        for (int k = 0; k < num_inputs; ++k) {
          const size_t row = static_cast<size_t>(Dims::of(in[k]).prod(axis, r)) * es;
          if (row) std::memcpy(dst, static_cast<const char*>(in[k].data) + o * row, row);
          dst += row;
        }
      }
    };
    ctx.parallel_for(static_cast<size_t>(outer), grain_for(static_cast<double>(out_row), 1 << 18),
                     std::move(body));
  }

 private:
  int64_t axis_;
};

}  // namespace

double concat_bid(const Node& node) {
  require_inputs(node, 1, -1);
  const int32_t dt = node.input(0).dtype();
  if (plugin::dtype_size(dt) == 0)
    node.fail(std::string("element type ") + dtype_name(dt) + " is not supported",
              MN_ERR_UNSUPPORTED);
  for (int k = 0; k < node.num_inputs(); ++k) {
    if (!node.has_input(k)) node.fail("input " + std::to_string(k) + " is missing");
    require_same_dtype(node, 0, k);
  }
  // Opset 4 made axis required; Concat-1 defaulted it to 1.
  if (!node.has_attr("axis") && node.op_version() >= 4) node.fail("attribute axis is required");
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x)) normalize_axis(node, node.attr_int("axis", 1), x.rank);
  return numel_estimate(*node.output(0).t) * plugin::dtype_size(dt) / 8.0;
}

std::unique_ptr<Kernel> concat_make(const Node& node) {
  concat_bid(node);
  return std::make_unique<ConcatKernel>(node, node.attr_int("axis", 1));
}

}  // namespace cpu_dense
}  // namespace minnow
