// Softmax / LogSoftmax. Opset < 13: the input is viewed as 2-D [prod(dims[:axis]),
// prod(dims[axis:])] (axis default 1) and normalised along the second dim; opset >= 13:
// normalised along `axis` alone (default -1). Both are (outer, len, inner) with inner = 1
// for the old form. Numerically stable: the line's maximum is subtracted first.
#pragma once

#include <cmath>

#include "common.h"

namespace minnow {
namespace cpu_dense {

class SoftmaxKernel final : public OpKernel {
 public:
  SoftmaxKernel(const Node& node, const char* kernel_name, bool log, bool coerce_2d, int64_t axis)
      : OpKernel(node, kernel_name), log_(log), coerce_2d_(coerce_2d), axis_(axis) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 4.0 * static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], MN_F32, "input");
    const Dims d = Dims::of(in[0]);
    check_output(out, num_outputs, 0, MN_F32, d);
    int64_t outer = 1, len = 1, inner = 1;
    if (d.rank > 0) {
      if (axis_ < -d.rank || axis_ >= d.rank)
        fail("axis " + std::to_string(axis_) + " out of range for rank " + std::to_string(d.rank));
      const int axis = static_cast<int>(axis_ < 0 ? axis_ + d.rank : axis_);
      outer = d.prod(0, axis);
      len = coerce_2d_ ? d.prod(axis, d.rank) : d[axis];
      inner = coerce_2d_ ? 1 : d.prod(axis + 1, d.rank);
    }
    const float* x = static_cast<const float*>(in[0].data);
    float* y = static_cast<float*>(out[0].data);
    const bool log = log_;
    auto body = [&](size_t l0, size_t l1) {
      for (int64_t line = static_cast<int64_t>(l0); line < static_cast<int64_t>(l1); ++line) {
        const int64_t o = line / inner, i = line % inner;
        const float* xl = x + o * len * inner + i;
        float* yl = y + o * len * inner + i;
        float m = -INFINITY;
        for (int64_t j = 0; j < len; ++j) m = std::max(m, xl[j * inner]);
        float sum = 0.0f;
        for (int64_t j = 0; j < len; ++j) {
          const float e = std::exp(xl[j * inner] - m);
          sum += e;
          if (!log) yl[j * inner] = e;
        }
        if (log) {
          const float shift = m + std::log(sum);
          for (int64_t j = 0; j < len; ++j) yl[j * inner] = xl[j * inner] - shift;
        } else {
          const float inv = 1.0f / sum;
          for (int64_t j = 0; j < len; ++j) yl[j * inner] *= inv;
        }
      }
    };
    ctx.parallel_for(static_cast<size_t>(outer * inner), grain_for(4.0 * len), std::move(body));
  }

 private:
  bool log_, coerce_2d_;
  int64_t axis_;
};

// Shared by Softmax and LogSoftmax (same attributes and version split).
inline std::unique_ptr<SoftmaxKernel> make_softmax_kernel(const Node& node, const char* name,
                                                          bool log) {
  require_inputs(node, 1, 1);
  require_input_dtype(node, 0, {MN_F32});
  const bool coerce = node.op_version() < 13;
  const int64_t axis = node.attr_int("axis", coerce ? 1 : -1);
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x) && x.rank > 0) normalize_axis(node, axis, x.rank);
  return std::make_unique<SoftmaxKernel>(node, name, log, coerce, axis);
}

}  // namespace cpu_dense
}  // namespace minnow
