// ConstantOfShape: a tensor of the shape given by input 0 (int64), every element the
// one-element `value` attribute (default float32 0); the element is copied by size, so
// any dtype the value tensor has works.
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class ConstantOfShapeKernel final : public OpKernel {
 public:
  ConstantOfShapeKernel(const Node& node, int32_t dtype, std::vector<unsigned char> value)
      : OpKernel(node, "constant_of_shape_ref"), dtype_(dtype), value_(std::move(value)) {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) / 8.0;
  }

  void run(const RunContext&, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    const std::vector<int64_t> s = read_ints(*this, in[0], "shape");
    if (s.size() > MN_MAX_RANK) fail("shape is longer than the maximum rank");
    Dims od;
    for (int64_t v : s) {
      if (v < 0) fail("negative dimension " + std::to_string(v));
      od[od.rank++] = v;
    }
    check_output(out, num_outputs, 0, dtype_, od);
    const int64_t n = od.numel();
    const size_t es = value_.size();
    char* y = static_cast<char*>(out[0].data);
    for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * es, value_.data(), es);
  }

 private:
  int32_t dtype_;
  std::vector<unsigned char> value_;  // one element's bytes
};

}  // namespace

double constant_of_shape_bid(const Node& node) {
  require_inputs(node, 1, 1);
  require_input_dtype(node, 0, {MN_I64});
  if (const mn_tensor* v = node.attr_tensor("value")) {
    if (numel(*v) != 1) node.fail("value must hold exactly one element");
    require_movable(node, v->dtype);
    if (!v->data) node.fail("value has no data");
  }
  return numel_estimate(*node.output(0).t) / 8.0;
}

std::unique_ptr<Kernel> constant_of_shape_make(const Node& node) {
  constant_of_shape_bid(node);
  int32_t dtype = MN_F32;
  std::vector<unsigned char> bytes(sizeof(float), 0);  // float32 0.0 is all-zero bits
  if (const mn_tensor* v = node.attr_tensor("value")) {
    dtype = v->dtype;
    const size_t es = plugin::dtype_size(dtype);
    const unsigned char* p = static_cast<const unsigned char*>(v->data);
    bytes.assign(p, p + es);
  }
  return std::make_unique<ConstantOfShapeKernel>(node, dtype, std::move(bytes));
}

}  // namespace cpu_dense
}  // namespace minnow
