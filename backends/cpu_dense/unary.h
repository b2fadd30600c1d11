// Element-wise unary kernels: one template, instantiated per op with an inlined functor
// (no per-element indirect call). Output 0 may alias input 0 (in place).
#pragma once

#include <type_traits>

#include "common.h"

namespace minnow {
namespace cpu_dense {

template <class T>
struct DtypeOf;
#define MINNOW_CPU_DENSE_DTYPE_OF(T, DT) \
  template <>                            \
  struct DtypeOf<T> {                    \
    static constexpr int32_t value = DT; \
  };
MINNOW_CPU_DENSE_DTYPE_OF(float, MN_F32)
MINNOW_CPU_DENSE_DTYPE_OF(int64_t, MN_I64)
// ONNX bool is one byte: uint8_t stands for it (kernels over uint8 data pass MN_U8
// explicitly).
MINNOW_CPU_DENSE_DTYPE_OF(uint8_t, MN_BOOL)
MINNOW_CPU_DENSE_DTYPE_OF(int8_t, MN_I8)
MINNOW_CPU_DENSE_DTYPE_OF(int16_t, MN_I16)
MINNOW_CPU_DENSE_DTYPE_OF(uint16_t, MN_U16)
MINNOW_CPU_DENSE_DTYPE_OF(int32_t, MN_I32)
MINNOW_CPU_DENSE_DTYPE_OF(uint32_t, MN_U32)
MINNOW_CPU_DENSE_DTYPE_OF(uint64_t, MN_U64)
#undef MINNOW_CPU_DENSE_DTYPE_OF

// A float32 element-wise op computed over whole runs by a kernels/eltwise.h function
// fn(x, y, n, p0, p1) (p0, p1: the op's parameters), for UnaryKernel<float, F32Run>.
struct F32Run {
  void (*fn)(const float* x, float* y, int64_t n, float p0, float p1);
  float p0 = 0, p1 = 0;
};

template <class T, class F>
class UnaryKernel final : public OpKernel {
 public:
  UnaryKernel(const Node& node, const char* kernel_name, F f)
      : OpKernel(node, kernel_name), f_(f) {}

  int inplace_input() const override { return 0; }

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* inputs, int num_inputs, mn_tensor* outputs,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    constexpr int32_t dt = DtypeOf<T>::value;
    check_dtype(inputs[0], dt, "input");
    Dims d = Dims::of(inputs[0]);
    check_output(outputs, num_outputs, 0, dt, d);
    const T* x = static_cast<const T*>(inputs[0].data);
    T* y = static_cast<T*>(outputs[0].data);
    const F f = f_;
    // Reading x[i] before writing y[i] keeps the in-place case (x == y) correct.
    auto body = [&](size_t b, size_t e) {
      if constexpr (std::is_same<F, F32Run>::value)
        f.fn(x + b, y + b, static_cast<int64_t>(e - b), f.p0, f.p1);
      else
        for (size_t i = b; i < e; ++i) y[i] = f(x[i]);
    };
    ctx.parallel_for(static_cast<size_t>(d.numel()), kElementwiseGrain, std::move(body));
  }

 private:
  F f_;
};

// Bid for a one-input element-wise op over the given dtypes; returns elements as flops.
inline double unary_bid(const Node& node, std::initializer_list<int32_t> dtypes) {
  require_inputs(node, 1, 1);
  require_input_dtype(node, 0, dtypes);
  return numel_estimate(*node.input(0).t);
}

template <class T, class F>
std::unique_ptr<Kernel> make_unary(const Node& node, const char* kernel_name, F f) {
  return std::make_unique<UnaryKernel<T, F>>(node, kernel_name, f);
}

// A float32 element-wise op whose definition is one expression of `x`: defines
// <op>_bid and <op>_make (ops.h) with the functor inlined into UnaryKernel.
#define MINNOW_CPU_DENSE_F32_UNARY(op, kernel_name, expr)                              \
  double op##_bid(const Node& node) { return unary_bid(node, {MN_F32}); }              \
  std::unique_ptr<Kernel> op##_make(const Node& node) {                                \
    op##_bid(node);                                                                    \
    return make_unary<float>(node, kernel_name, [](float x) -> float { return expr; }); \
  }

}  // namespace cpu_dense
}  // namespace minnow
