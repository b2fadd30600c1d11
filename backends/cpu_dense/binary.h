// Element-wise ops with two or more inputs and numpy broadcasting (broadcast.h): one
// kernel template per shape of op (binary, variadic), instantiated per op with an inlined
// functor.
#pragma once

#include <type_traits>
#include <utility>

#include "broadcast.h"
#include "dtype_dispatch.h"
#include "kernels/eltwise.h"
#include "unary.h"

namespace minnow {
namespace cpu_dense {

// Base of binary functors. `nonzero_b<TB>()`: the kernel must reject a zero in input B
// before computing (integer division), because that would be undefined behaviour.
struct BinaryOpBase {
  template <class TB>
  static constexpr bool nonzero_b() {
    return false;
  }
  // The kernels::BinaryKind whose SIMD kernel computes this op on float32 runs, or -1.
  static constexpr int kF32Kind = -1;
};
template <class Op, class = void>
struct F32KindOf {
  static constexpr int value = -1;
};
template <class Op>
struct F32KindOf<Op, std::void_t<decltype(Op::kF32Kind)>> {
  static constexpr int value = Op::kF32Kind;
};

// int64 arithmetic wraps (two's complement) instead of overflowing into undefined
// behaviour: shape arithmetic never gets there, but bad data must not be UB.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
// The narrower / unsigned integer types wrap the same way (modulo 2^bits, as ONNX
// runtimes compute them).
template <class T, typename std::enable_if<std::is_integral<T>::value &&
                                               !std::is_same<T, int64_t>::value,
                                           int>::type = 0>
inline T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <class T, typename std::enable_if<std::is_integral<T>::value &&
                                               !std::is_same<T, int64_t>::value,
                                           int>::type = 0>
inline T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <class T, typename std::enable_if<std::is_integral<T>::value &&
                                               !std::is_same<T, int64_t>::value,
                                           int>::type = 0>
inline T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline float wrap_add(float a, float b) { return a + b; }
inline float wrap_sub(float a, float b) { return a - b; }
inline float wrap_mul(float a, float b) { return a * b; }

// y[i] = op(a[i*sa], b[i*sb]) for one run; the stride patterns that occur after dim
// merging (dense/dense, scalar/dense, dense/scalar) get their own straight loops.
template <class TA, class TB, class TO, class Op>
inline void binary_span(const Op& op, const TA* a, int64_t sa, const TB* b, int64_t sb, TO* y,
                        int64_t n) {
  if constexpr (std::is_same<TA, float>::value && std::is_same<TB, float>::value &&
                std::is_same<TO, float>::value && F32KindOf<Op>::value >= 0) {
    if ((sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
      kernels::f32_binary(static_cast<kernels::BinaryKind>(F32KindOf<Op>::value), a, sa == 0, b,
                          sb == 0, y, n);
      return;
    }
  }
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], b[i]);
  } else if (sa == 0 && sb == 1) {
    const TA x = a[0];
    for (int64_t i = 0; i < n; ++i) y[i] = op(x, b[i]);
  } else if (sa == 1 && sb == 0) {
    const TB x = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], x);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i * sa], b[i * sb]);
  }
}

// Runs op over the broadcast of a (shape da) and b (shape db) into dense y (shape o).
template <class TA, class TB, class TO, class Op>
void broadcast_apply(const RunContext& ctx, const Op& op, const TA* a, const Dims& da, const TB* b,
                     const Dims& db, TO* y, const Dims& o) {
  const Dims* in[2] = {&da, &db};
  const StridedLoop<2> loop = broadcast_loop<2>(o, in);
  auto body = [&](size_t begin, size_t end) {
    loop.for_each_run(static_cast<int64_t>(begin), static_cast<int64_t>(end),
                      [&](int64_t pos, const int64_t* off, const int64_t* step, int64_t n) {
                        binary_span(op, a + off[0], step[0], b + off[1], step[1], y + pos, n);
                      });
  };
  ctx.parallel_for(static_cast<size_t>(loop.total), kElementwiseGrain, std::move(body));
}

// Opsets < 7 (Add, Sub, Mul, Div, Pow, Equal, Less, Greater) broadcast only with
// broadcast=1, B onto A, B's dims aligned at `axis` (default: trailing). Expressed as a
// reshape of B (trailing ones) so the numpy machinery does the rest.
struct LegacyBroadcast {
  bool enabled = false;
  bool has_axis = false;
  int64_t axis = 0;

  static LegacyBroadcast parse(const Node& node) {
    LegacyBroadcast l;
    if (node.op_version() < 7 && node.attr_int("broadcast", 0) != 0) {
      l.enabled = true;
      l.has_axis = node.has_attr("axis");
      l.axis = node.attr_int("axis", 0);
    }
    return l;
  }
  // False if B does not fit into A at `axis`.
  bool apply(const Dims& a, Dims* b) const {
    if (!enabled || !has_axis) return true;
    int64_t ax = axis < 0 ? axis + a.rank : axis;
    if (ax < 0 || ax + b->rank > a.rank) return false;
    int trailing = static_cast<int>(a.rank - ax - b->rank);
    for (int i = 0; i < trailing; ++i) b->d[b->rank++] = 1;
    return true;
  }
};

template <class TA, class TB, class Op>
class BinaryKernel final : public OpKernel {
 public:
  using TO = decltype(std::declval<const Op&>()(TA(), TB()));

  // in_dt / out_dt: the element types checked at run time (uint8 data passes MN_U8,
  // since uint8_t defaults to bool).
  BinaryKernel(const Node& node, const char* kernel_name, Op op,
               int32_t in_dt = DtypeOf<TA>::value, int32_t out_dt = DtypeOf<TO>::value)
      : OpKernel(node, kernel_name),
        op_(op),
        legacy_(LegacyBroadcast::parse(node)),
        in_dt_(in_dt),
        b_dt_(std::is_same<TA, TB>::value ? in_dt : DtypeOf<TB>::value),  // Pow mixes types
        out_dt_(out_dt) {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* inputs, int num_inputs, mn_tensor* outputs,
           int num_outputs) const override {
    if (num_inputs < 2) fail("inputs missing at run time");
    check_dtype(inputs[0], in_dt_, "input A");
    check_dtype(inputs[1], b_dt_, "input B");
    Dims da = Dims::of(inputs[0]), db = Dims::of(inputs[1]), o;
    if (!legacy_.apply(da, &db))
      fail("B " + shape_str(inputs[1]) + " does not fit A " + shape_str(inputs[0]) + " at axis " +
           std::to_string(legacy_.axis));
    if (!broadcast_dims(da, db, &o))
      fail("shapes " + shape_str(inputs[0]) + " and " + shape_str(inputs[1]) +
           " are not broadcastable");
    check_output(outputs, num_outputs, 0, out_dt_, o);
    const TA* a = static_cast<const TA*>(inputs[0].data);
    const TB* b = static_cast<const TB*>(inputs[1].data);
    if (Op::template nonzero_b<TB>()) {
      const int64_t nb = db.numel();
      for (int64_t i = 0; i < nb; ++i)
        if (b[i] == TB(0)) fail("integer division by zero");
    }
    broadcast_apply(ctx, op_, a, da, b, db, static_cast<TO*>(outputs[0].data), o);
  }

 private:
  Op op_;
  LegacyBroadcast legacy_;
  int32_t in_dt_, b_dt_, out_dt_;
};

// Sum / Max / Min: any number of inputs, broadcast together. y = x0 op x1, then
// y = y op xk for the rest (y already has the full output shape).
template <class T, class Op>
class VariadicKernel final : public OpKernel {
 public:
  VariadicKernel(const Node& node, const char* kernel_name, Op op,
                 int32_t dt = DtypeOf<T>::value)
      : OpKernel(node, kernel_name), op_(op), dt_(dt) {}

  double flops(const mn_tensor*, int num_in, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) * (num_in > 1 ? num_in - 1 : 1);
  }

  void run(const RunContext& ctx, const mn_tensor* inputs, int num_inputs, mn_tensor* outputs,
           int num_outputs) const override {
    if (num_inputs < 1) fail("inputs missing at run time");
    const int32_t dt = dt_;
    Dims o = Dims::of(inputs[0]);
    for (int k = 0; k < num_inputs; ++k) {
      check_dtype(inputs[k], dt, "input");
      if (!broadcast_dims(o, Dims::of(inputs[k]), &o))
        fail("input " + std::to_string(k) + " " + shape_str(inputs[k]) +
             " does not broadcast with the others");
    }
    check_output(outputs, num_outputs, 0, dt, o);
    T* y = static_cast<T*>(outputs[0].data);
    const T* x0 = static_cast<const T*>(inputs[0].data);
    if (num_inputs == 1) {  // a single input is a copy (its shape is the output's)
      if (y != x0) std::memcpy(y, x0, static_cast<size_t>(o.numel()) * sizeof(T));
      return;
    }
    broadcast_apply(ctx, op_, x0, Dims::of(inputs[0]), static_cast<const T*>(inputs[1].data),
                    Dims::of(inputs[1]), y, o);
    for (int k = 2; k < num_inputs; ++k)
      broadcast_apply(ctx, op_, static_cast<const T*>(y), o, static_cast<const T*>(inputs[k].data),
                      Dims::of(inputs[k]), y, o);
  }

 private:
  Op op_;
  int32_t dt_;
};

// Validation shared by bid and make: input count, dtypes, and — when both shapes are
// known — that they broadcast. Returns output elements as the flops estimate.
double binary_bid(const Node& node, std::initializer_list<int32_t> dtypes);
double variadic_bid(const Node& node, std::initializer_list<int32_t> dtypes);

// Binary op over same-typed inputs, float32 or int64 (`i64_name` null: float32 only).
template <class Op>
std::unique_ptr<Kernel> make_binary(const Node& node, const char* f32_name, const char* i64_name,
                                    Op op = Op()) {
  if (i64_name)
    binary_bid(node, {MN_F32, MN_I64});
  else
    binary_bid(node, {MN_F32});
  if (node.input(0).dtype() == MN_I64)
    return std::make_unique<BinaryKernel<int64_t, int64_t, Op>>(node, i64_name, op);
  return std::make_unique<BinaryKernel<float, float, Op>>(node, f32_name, op);
}

template <class Op>
std::unique_ptr<Kernel> make_variadic(const Node& node, const char* f32_name, const char* i64_name,
                                      Op op = Op()) {
  if (i64_name)
    variadic_bid(node, {MN_F32, MN_I64});
  else
    variadic_bid(node, {MN_F32});
  if (node.input(0).dtype() == MN_I64)
    return std::make_unique<VariadicKernel<int64_t, Op>>(node, i64_name, op);
  return std::make_unique<VariadicKernel<float, Op>>(node, f32_name, op);
}

// A binary kernel over one of kOtherIntDtypes (null if the input has another type); the
// output type is the node's (bool for comparisons, the input's for arithmetic).
template <class Op>
std::unique_ptr<Kernel> make_binary_other_int(const Node& node, const char* name, Op op = Op()) {
  const int32_t dt = node.input(0).dtype(), odt = node.output(0).dtype();
  std::unique_ptr<Kernel> k;
  with_other_int(dt, [&](auto t) {
    using T = decltype(t);
    k = std::make_unique<BinaryKernel<T, T, Op>>(node, name, op, dt, odt);
  });
  return k;
}

template <class Op>
std::unique_ptr<Kernel> make_variadic_other_int(const Node& node, const char* name,
                                                Op op = Op()) {
  const int32_t dt = node.input(0).dtype();
  std::unique_ptr<Kernel> k;
  with_other_int(dt, [&](auto t) {
    using T = decltype(t);
    k = std::make_unique<VariadicKernel<T, Op>>(node, name, op, dt);
  });
  return k;
}

}  // namespace cpu_dense
}  // namespace minnow
