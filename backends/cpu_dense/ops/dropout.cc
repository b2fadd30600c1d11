// Dropout at inference: the output is the input; the optional mask output is all true
// (bool since opset 10, the input's type before). Training (opset 12+ training_mode input
// true) needs random numbers and is not an inference op: refused at bid when the flag is
// a constant, an error at run time otherwise. is_test / ratio / seed are irrelevant here.
#include "../copy.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

bool training_flag(const mn_tensor& t) {
  return t.dtype == MN_BOOL && t.data && numel(t) == 1 && *static_cast<const uint8_t*>(t.data);
}

class DropoutKernel final : public CopyKernel {
 public:
  explicit DropoutKernel(const Node& node) : CopyKernel(node, "dropout_copy_ref") {}

 protected:
  bool expected_output(const mn_tensor& in, Dims* out) const override {
    *out = Dims::of(in);
    return true;
  }

  void finish(const mn_tensor* in, int num_inputs, mn_tensor* out, int num_outputs) const override {
    if (num_inputs > 2 && present(in[2]) && training_flag(in[2]))
      fail("training_mode = true is not supported by an inference backend");
    if (num_outputs < 2 || !present(out[1])) return;
    const mn_tensor& mask = out[1];
    if (Dims::of(mask) != Dims::of(in[0]))
      fail("mask " + shape_str(mask) + " must have the input's shape " + shape_str(in[0]));
    const size_t n = static_cast<size_t>(numel(mask));
    if (mask.dtype == MN_BOOL) {
      std::memset(mask.data, 1, n);
    } else if (mask.dtype == MN_F32) {
      float* m = static_cast<float*>(mask.data);
      for (size_t i = 0; i < n; ++i) m[i] = 1.0f;
    } else {
      fail(std::string("mask of type ") + dtype_name(mask.dtype) + " is not supported");
    }
  }
};

}  // namespace

double dropout_bid(const Node& node) {
  double f = copy_bid(node, 1, 3);
  if (node.num_outputs() > 1 && present(*node.output(1).t)) {
    const int32_t mt = node.output(1).dtype();
    if (mt != MN_BOOL && mt != MN_F32)
      node.fail(std::string("mask of type ") + dtype_name(mt) + " is not supported",
                MN_ERR_UNSUPPORTED);
  }
  if (node.has_input(2) && training_flag(*node.input(2).t))
    node.fail("training_mode = true is not supported by an inference backend", MN_ERR_UNSUPPORTED);
  return f;
}

std::unique_ptr<Kernel> dropout_make(const Node& node) {
  dropout_bid(node);
  return std::make_unique<DropoutKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
