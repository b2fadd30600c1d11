// Cast: converts element types. `to` is an ONNX TensorProto code (1 float, 2 uint8,
// 3 int8, 4 uint16, 5 int16, 6 int32, 7 int64, 9 bool, 11 double, 12 uint32, 13 uint64);
// the core already mapped it to the output's dtype, so the kernel switches on the
// input/output dtypes it sees. Float -> integer truncates toward zero like C; values that
// do not fit (and NaN) become 0 instead of undefined behaviour. Anything -> bool is != 0.
// float16/bfloat16 tensors are float32 in the engine (the frontend widens them); a Cast to
// one of them arrives as float32 -> float32 with round_to = "float16" / "bfloat16", and
// the kernel rounds each value to the nearest one that type holds. Strings are not handled.
#include <limits>
#include <minnow/float_rounding.h>

#include "../dtype_dispatch.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same<To, bool>::value) {
    return v != From(0);
  } else if constexpr (std::is_floating_point<From>::value && std::is_integral<To>::value) {
    // In range iff trunc(v) lies in [lowest, max]; compare in long double to be exact.
    const long double t = std::trunc(static_cast<long double>(v));
    if (!(t >= static_cast<long double>(std::numeric_limits<To>::lowest()) &&
          t <= static_cast<long double>(std::numeric_limits<To>::max())))
      return To(0);
    return static_cast<To>(t);
  } else {
    return static_cast<To>(v);
  }
}

template <class To, class From>
void cast_loop(const RunContext& ctx, const void* src, void* dst, int64_t n) {
  const From* x = static_cast<const From*>(src);
  To* y = static_cast<To*>(dst);
  auto body = [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) y[i] = convert<To>(x[i]);
  };
  ctx.parallel_for(static_cast<size_t>(n), kElementwiseGrain, std::move(body));
}

enum class RoundTo { kNone, kFloat16, kBFloat16 };

class CastKernel final : public OpKernel {
 public:
  CastKernel(const Node& node, int32_t to, RoundTo round)
      : OpKernel(node, round == RoundTo::kNone      ? "cast_ref"
                       : round == RoundTo::kFloat16 ? "f32_round_f16_ref"
                                                    : "f32_round_bf16_ref"),
        to_(to),
        round_(round) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    check_output(out, num_outputs, 0, to_, Dims::of(in[0]));
    const int64_t n = numel(in[0]);
    if (round_ != RoundTo::kNone) {
      check_dtype(in[0], MN_F32, "input");
      const float* x = static_cast<const float*>(in[0].data);
      float* y = static_cast<float*>(out[0].data);
      const bool half = round_ == RoundTo::kFloat16;
      auto body = [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) y[i] = half ? round_to_float16(x[i]) : round_to_bfloat16(x[i]);
      };
      ctx.parallel_for(static_cast<size_t>(n), kElementwiseGrain, std::move(body));
      return;
    }
    bool ok = false;
    with_numeric_type(in[0].dtype, [&](auto from) {
      ok = with_numeric_type(to_, [&](auto to) {
        cast_loop<decltype(to), decltype(from)>(ctx, in[0].data, out[0].data, n);
      });
    });
    if (!ok)
      fail(std::string("cannot cast ") + dtype_name(in[0].dtype) + " to " + dtype_name(to_));
  }

 private:
  int32_t to_;
  RoundTo round_;
};

RoundTo round_to(const Node& node) {
  const std::string r = node.attr_string("round_to", "");
  if (r.empty()) return RoundTo::kNone;
  if (r != "float16" && r != "bfloat16")
    node.fail("round_to must be float16 or bfloat16, got '" + r + "'");
  if (node.input(0).dtype() != MN_F32 || node.output(0).dtype() != MN_F32)
    node.fail("round_to needs a float32 -> float32 Cast");
  return r == "float16" ? RoundTo::kFloat16 : RoundTo::kBFloat16;
}

bool castable(int32_t dt) {
  return with_numeric_type(dt, [](auto) {});
}

}  // namespace

double cast_bid(const Node& node) {
  require_inputs(node, 1, 1);
  const int32_t from = node.input(0).dtype(), to = node.output(0).dtype();
  if (!castable(from) || !castable(to))
    node.fail(std::string("cast from ") + dtype_name(from) + " to " + dtype_name(to) +
                  " is not supported",
              MN_ERR_UNSUPPORTED);
  round_to(node);
  return numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> cast_make(const Node& node) {
  cast_bid(node);
  return std::make_unique<CastKernel>(node, node.output(0).dtype(), round_to(node));
}

}  // namespace cpu_dense
}  // namespace minnow
