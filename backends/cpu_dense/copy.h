// Ops that only move bytes, the output having the input's elements in the same order:
// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (inference). Any element type.
// The output may alias the input (inplace_input = 0); then there is nothing to copy.
#pragma once

#include "common.h"

namespace minnow {
namespace cpu_dense {

// Byte copy split across the session's threads; a no-op when dst == src.
void parallel_copy(const RunContext& ctx, void* dst, const void* src, size_t bytes);

class CopyKernel : public OpKernel {
 public:
  // `same_shape`: the output must have the input's shape exactly (Identity); otherwise
  // only the element count is checked, unless a subclass gives the shape.
  CopyKernel(const Node& node, const char* kernel_name, bool same_shape = false)
      : OpKernel(node, kernel_name), same_shape_(same_shape) {}

  int inplace_input() const override { return 0; }

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0])) * plugin::dtype_size(in[0].dtype) / 8.0;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1 || !present(in[0])) fail("input missing at run time");
    if (num_outputs < 1) fail("output missing at run time");
    const size_t es = plugin::dtype_size(in[0].dtype);
    if (es == 0) fail(std::string("cannot copy elements of type ") + dtype_name(in[0].dtype));
    Dims expected;
    if (expected_output(in[0], &expected))
      check_output(out, num_outputs, 0, in[0].dtype, expected);
    else {
      check_dtype(out[0], in[0].dtype, "output");
      if (numel(out[0]) != numel(in[0]))
        fail("output " + shape_str(out[0]) + " does not hold the " + std::to_string(numel(in[0])) +
             " elements of input " + shape_str(in[0]));
    }
    parallel_copy(ctx, out[0].data, in[0].data, static_cast<size_t>(numel(in[0])) * es);
    finish(in, num_inputs, out, num_outputs);
  }

 protected:
  // Ops whose output shape follows from the input alone say so (checked exactly);
  // otherwise only the element count is checked.
  virtual bool expected_output(const mn_tensor& in, Dims* out) const {
    if (same_shape_) *out = Dims::of(in);
    return same_shape_;
  }
  // Extra outputs (Dropout's mask).
  virtual void finish(const mn_tensor*, int, mn_tensor*, int) const {}

 private:
  bool same_shape_;
};

// Bid checks shared by the copy ops: input 0 present with a fixed-size element type.
double copy_bid(const Node& node, int min_inputs, int max_inputs);
// The same, for Reshape / Squeeze / Unsqueeze: input 1, when present, is the int64 shape
// or axes tensor (already used by shape inference; the kernel only copies).
double copy_bid_int64_arg(const Node& node, int min_inputs, int max_inputs);

// make() of the plain copy ops: validates with `bid`, then the copy kernel.
std::unique_ptr<Kernel> copy_kernel(const Node& node, double (*bid)(const Node&),
                                    const char* kernel_name, bool same_shape = false);

}  // namespace cpu_dense
}  // namespace minnow
