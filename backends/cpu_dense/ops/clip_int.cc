// Clip over integer tensors (opset >= 12 allows every numeric type): min(max(x, lo), hi)
// with the optional scalar bounds read at run time; an absent bound is the type's limit.
// Reached from clip.cc when the input is not float32.
#include <limits>

#include "../binary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

template <class T>
class IntClipKernel final : public OpKernel {
 public:
  IntClipKernel(const Node& node, int32_t dt) : OpKernel(node, "int_clip_ref"), dt_(dt) {}

  int inplace_input() const override { return 0; }

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 2.0 * static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_dtype(in[0], dt_, "input");
    const Dims d = Dims::of(in[0]);
    check_output(out, num_outputs, 0, dt_, d);
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if (num_inputs > 1 && present(in[1])) lo = scalar(in[1], "min");
    if (num_inputs > 2 && present(in[2])) hi = scalar(in[2], "max");
    const T* x = static_cast<const T*>(in[0].data);
    T* y = static_cast<T*>(out[0].data);
    auto body = [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) {
        const T v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
      }
    };
    ctx.parallel_for(static_cast<size_t>(d.numel()), kElementwiseGrain, std::move(body));
  }

 private:
  T scalar(const mn_tensor& t, const char* what) const {
    check_dtype(t, dt_, what);
    if (numel(t) != 1) fail(std::string(what) + " must be a scalar, got " + shape_str(t));
    return *static_cast<const T*>(t.data);
  }
  int32_t dt_;
};

}  // namespace

double clip_int_bid(const Node& node) {
  if (node.op_version() < 12) node.fail("integer Clip needs opset 12", MN_ERR_UNSUPPORTED);
  require_inputs(node, 1, 3);
  require_input_dtype(node, 0,
                      {MN_I64, MN_I8, MN_U8, MN_I16, MN_U16, MN_I32, MN_U32, MN_U64});
  for (int i = 1; i < node.num_inputs(); ++i)
    if (node.has_input(i)) require_same_dtype(node, 0, i);
  return 2.0 * numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> clip_int_make(const Node& node) {
  clip_int_bid(node);
  const int32_t dt = node.input(0).dtype();
  if (dt == MN_I64) return std::make_unique<IntClipKernel<int64_t>>(node, dt);
  std::unique_ptr<Kernel> k;
  with_other_int(dt, [&](auto t) { k = std::make_unique<IntClipKernel<decltype(t)>>(node, dt); });
  return k;
}

}  // namespace cpu_dense
}  // namespace minnow
