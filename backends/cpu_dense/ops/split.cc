// Split: cuts the input along `axis` into the node's outputs, any element type. Sizes
// come from the `split` attribute (opset < 13) or input 1 (>= 13); without them the
// dimension is cut into equal chunks (ceil-sized with a smaller last one, which is what
// opset 18's num_outputs asks and equals the even split otherwise).
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class SplitKernel final : public OpKernel {
 public:
  SplitKernel(const Node& node)
      : OpKernel(node, "split_ref"),
        axis_(node.attr_int("axis", 0)),
        input_form_(node.op_version() >= 13),
        split_(node.attr_ints("split")) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0])) / 8.0;
  }

  void run(const RunContext&, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    const Dims xd = Dims::of(in[0]);
    if (axis_ < -xd.rank || axis_ >= xd.rank)
      fail("axis " + std::to_string(axis_) + " out of range for " + shape_str(in[0]));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + xd.rank : axis_);
    const int64_t d = xd[axis], k = num_outputs;
    std::vector<int64_t> sizes = split_;
    if (input_form_) {
      sizes.clear();
      if (num_inputs > 1 && present(in[1])) sizes = read_ints(*this, in[1], "split");
    }
    if (sizes.empty()) {
      if (k < 1) fail("no outputs");
      const int64_t chunk = (d + k - 1) / k;
      for (int64_t i = 0; i < k; ++i)
        sizes.push_back(std::max<int64_t>(0, std::min(chunk, d - i * chunk)));
    }
    if (static_cast<int64_t>(sizes.size()) != k)
      fail("split has " + std::to_string(sizes.size()) + " entries for " + std::to_string(k) +
           " outputs");
    int64_t sum = 0;
    for (int64_t v : sizes) {
      if (v < 0) fail("negative split size");
      sum += v;
    }
    if (sum != d)
      fail("split sizes sum to " + std::to_string(sum) + ", dimension is " + std::to_string(d));
    const size_t es = plugin::dtype_size(in[0].dtype);
    const int64_t outer = xd.prod(0, axis), inner = xd.prod(axis + 1, xd.rank);
    const char* x = static_cast<const char*>(in[0].data);
    int64_t at = 0;
    for (int64_t i = 0; i < k; ++i) {
      Dims od = xd;
      od[axis] = sizes[i];
      check_output(out, num_outputs, static_cast<int>(i), in[0].dtype, od);
      const size_t row = static_cast<size_t>(sizes[i] * inner) * es;
      char* y = static_cast<char*>(out[i].data);
      for (int64_t o = 0; o < outer && row; ++o)
        std::memcpy(y + o * row, x + (static_cast<size_t>((o * d + at) * inner)) * es, row);
      at += sizes[i];
    }
  }

 private:
  int64_t axis_;
  bool input_form_;
  std::vector<int64_t> split_;
};

}  // namespace

double split_bid(const Node& node) {
  require_inputs(node, 1, node.op_version() >= 13 ? 2 : 1);
  require_movable(node, node.input(0).dtype());
  if (node.op_version() >= 13 && node.has_input(1)) require_input_dtype(node, 1, {MN_I64});
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x)) normalize_axis(node, node.attr_int("axis", 0), x.rank);
  return numel_estimate(x) / 8.0;
}

std::unique_ptr<Kernel> split_make(const Node& node) {
  split_bid(node);
  return std::make_unique<SplitKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
