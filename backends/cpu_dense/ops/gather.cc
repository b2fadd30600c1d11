// Gather: picks slices of `data` along `axis` by `indices` (int64 or int32, negative
// counts from the end), any element type. Output = data[:axis] + indices.shape +
// data[axis+1:]; viewed as (outer, axis, inner) each (outer, index) pair is one memcpy of
// `inner` elements.
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class GatherKernel final : public OpKernel {
 public:
  GatherKernel(const Node& node, int64_t axis) : OpKernel(node, "gather_ref"), axis_(axis) {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) / 8.0;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 2) fail("inputs missing at run time");
    const Dims xd = Dims::of(in[0]), id = Dims::of(in[1]);
    if (xd.rank < 1) fail("data must have rank >= 1");
    if (axis_ < -xd.rank || axis_ >= xd.rank)
      fail("axis " + std::to_string(axis_) + " out of range for data " + shape_str(in[0]));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + xd.rank : axis_);
    if (xd.rank + id.rank - 1 > MN_MAX_RANK) fail("output rank too large");
    Dims od;
    for (int i = 0; i < axis; ++i) od[od.rank++] = xd[i];
    for (int i = 0; i < id.rank; ++i) od[od.rank++] = id[i];
    for (int i = axis + 1; i < xd.rank; ++i) od[od.rank++] = xd[i];
    check_output(out, num_outputs, 0, in[0].dtype, od);
    const std::vector<int64_t> idx = read_ints(*this, in[1], "indices");
    const int64_t dim = xd[axis];
    for (int64_t v : idx)
      if (v < -dim || v >= dim)
        fail("index " + std::to_string(v) + " out of range for a dimension of " +
             std::to_string(dim));
    const size_t es = plugin::dtype_size(in[0].dtype);
    const int64_t outer = xd.prod(0, axis), n = static_cast<int64_t>(idx.size());
    const size_t row = static_cast<size_t>(xd.prod(axis + 1, xd.rank)) * es;
    const char* x = static_cast<const char*>(in[0].data);
    char* y = static_cast<char*>(out[0].data);
    auto body = [&](size_t b, size_t e) {
      for (size_t p = b; p < e; ++p) {
        const int64_t o = static_cast<int64_t>(p) / (n ? n : 1), j = static_cast<int64_t>(p) % n;
        const int64_t src = idx[j] < 0 ? idx[j] + dim : idx[j];
        if (row) std::memcpy(y + p * row, x + (o * dim + src) * row, row);
      }
    };
    if (n > 0)
      ctx.parallel_for(static_cast<size_t>(outer * n), grain_for(static_cast<double>(row), 1 << 16),
                       std::move(body));
  }

 private:
  int64_t axis_;
};

}  // namespace

double gather_bid(const Node& node) {
  require_inputs(node, 2, 2);
  require_movable(node, node.input(0).dtype());
  require_input_dtype(node, 1, {MN_I64, MN_I32});
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x)) {
    if (x.rank < 1) node.fail("data must have rank >= 1");
    normalize_axis(node, node.attr_int("axis", 0), x.rank);
  }
  return numel_estimate(*node.output(0).t) / 8.0;
}

std::unique_ptr<Kernel> gather_make(const Node& node) {
  gather_bid(node);
  return std::make_unique<GatherKernel>(node, node.attr_int("axis", 0));
}

}  // namespace cpu_dense
}  // namespace minnow
