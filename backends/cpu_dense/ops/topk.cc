// TopK: the k largest (or smallest, `largest`=0) elements along `axis` and their int64
// indices; k is an attribute before opset 10 and a one-element int64 input from 10.
// Ties keep the lower index first (ONNX's order); `sorted`=0 is allowed to return any
// order, so the sorted order is returned for it too. float32 and int64 values.
#include <algorithm>
#include <numeric>

#include "../data_ops.h"
#include "../unary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

template <class T>
class TopKKernel final : public OpKernel {
 public:
  explicit TopKKernel(const Node& node)
      : OpKernel(node, "topk_ref"),
        input_form_(node.op_version() >= 10),
        k_(node.attr_int("k", -1)),
        axis_(node.attr_int("axis", -1)),
        largest_(node.attr_int("largest", 1) != 0) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0])) * 4.0;
  }

  void run(const RunContext&, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], DtypeOf<T>::value, "input");
    const Dims xd = Dims::of(in[0]);
    int64_t k = k_;
    if (input_form_) {
      if (num_inputs < 2) fail("K missing at run time");
      const std::vector<int64_t> kv = read_ints(*this, in[1], "K");
      if (kv.size() != 1) fail("K must hold one value");
      k = kv[0];
    }
    if (axis_ < -xd.rank || axis_ >= xd.rank)
      fail("axis " + std::to_string(axis_) + " out of range for " + shape_str(in[0]));
    const int a = static_cast<int>(axis_ < 0 ? axis_ + xd.rank : axis_);
    const int64_t d = xd[a];
    if (k < 0 || k > d) fail("k = " + std::to_string(k) + " for an axis of " + std::to_string(d));
    Dims od = xd;
    od[a] = k;
    check_output(out, num_outputs, 0, DtypeOf<T>::value, od);
    check_output(out, num_outputs, 1, MN_I64, od);
    const int64_t outer = xd.prod(0, a), inner = xd.prod(a + 1, xd.rank);
    const T* x = static_cast<const T*>(in[0].data);
    T* yv = static_cast<T*>(out[0].data);
    int64_t* yi = static_cast<int64_t*>(out[1].data);
    std::vector<int64_t> order(static_cast<size_t>(d));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = x + o * d * inner + i;
        std::iota(order.begin(), order.end(), 0);
        // Before: greater (or smaller) value, then lower index; NaN counts as largest.
        auto before = [&](int64_t p, int64_t q) {
          const T u = row[p * inner], v = row[q * inner];
          const bool un = is_nan(u), vn = is_nan(v);
          if (un || vn) {
            if (un && vn) return p < q;
            return largest_ ? un : vn;
          }
          if (u != v) return largest_ ? u > v : u < v;
          return p < q;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t dst = (o * k + j) * inner + i;
          yv[dst] = row[order[j] * inner];
          yi[dst] = order[j];
        }
      }
  }

 private:
  bool input_form_;
  int64_t k_, axis_;
  bool largest_;
};

}  // namespace

double topk_bid(const Node& node) {
  const bool input_form = node.op_version() >= 10;
  require_inputs(node, input_form ? 2 : 1, input_form ? 2 : 1);
  require_input_dtype(node, 0, {MN_F32, MN_I64});
  if (input_form) require_input_dtype(node, 1, {MN_I64});
  else if (!node.has_attr("k")) node.fail("attribute k is required");
  return numel_estimate(*node.input(0).t) * 4.0;
}

std::unique_ptr<Kernel> topk_make(const Node& node) {
  topk_bid(node);
  if (node.input(0).dtype() == MN_I64) return std::make_unique<TopKKernel<int64_t>>(node);
  return std::make_unique<TopKKernel<float>>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
