// Where: y = cond ? x : y over the numpy broadcast of all three inputs; cond is bool,
// x and y any (same) element type, moved by size.
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

template <class T>
void where_loop(const RunContext& ctx, const StridedLoop<3>& loop, const mn_tensor* in, void* dst) {
  const uint8_t* c = static_cast<const uint8_t*>(in[0].data);
  const T* a = static_cast<const T*>(in[1].data);
  const T* b = static_cast<const T*>(in[2].data);
  T* y = static_cast<T*>(dst);
  auto body = [&](size_t lo, size_t hi) {
    loop.for_each_run(static_cast<int64_t>(lo), static_cast<int64_t>(hi),
                      [&](int64_t pos, const int64_t* off, const int64_t* st, int64_t n) {
                        for (int64_t i = 0; i < n; ++i)
                          y[pos + i] = c[off[0] + i * st[0]] ? a[off[1] + i * st[1]]
                                                             : b[off[2] + i * st[2]];
                      });
  };
  ctx.parallel_for(static_cast<size_t>(loop.total), kElementwiseGrain, std::move(body));
}

class WhereKernel final : public OpKernel {
 public:
  explicit WhereKernel(const Node& node) : OpKernel(node, "where_ref") {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 3) fail("inputs missing at run time");
    check_dtype(in[0], MN_BOOL, "condition");
    check_dtype(in[2], in[1].dtype, "input Y");
    const Dims dc = Dims::of(in[0]), dx = Dims::of(in[1]), dy = Dims::of(in[2]);
    Dims o;
    if (!broadcast_dims(dc, dx, &o) || !broadcast_dims(o, dy, &o))
      fail("shapes " + shape_str(in[0]) + ", " + shape_str(in[1]) + " and " + shape_str(in[2]) +
           " are not broadcastable");
    check_output(out, num_outputs, 0, in[1].dtype, o);
    if (o.numel() == 0) return;
    const Dims* ins[3] = {&dc, &dx, &dy};
    const StridedLoop<3> loop = broadcast_loop<3>(o, ins);
    switch (plugin::dtype_size(in[1].dtype)) {
      case 1: where_loop<uint8_t>(ctx, loop, in, out[0].data); break;
      case 2: where_loop<uint16_t>(ctx, loop, in, out[0].data); break;
      case 4: where_loop<uint32_t>(ctx, loop, in, out[0].data); break;
      case 8: where_loop<uint64_t>(ctx, loop, in, out[0].data); break;
      default: fail(std::string("unsupported element type ") + dtype_name(in[1].dtype));
    }
  }
};

}  // namespace

double where_bid(const Node& node) {
  require_inputs(node, 3, 3);
  require_input_dtype(node, 0, {MN_BOOL});
  require_movable(node, node.input(1).dtype());
  require_same_dtype(node, 1, 2);
  return numel_estimate(*node.output(0).t);
}

std::unique_ptr<Kernel> where_make(const Node& node) {
  where_bid(node);
  return std::make_unique<WhereKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
