// Transpose: output dim i is input dim perm[i] (default: reversed), any element type.
// A strided copy: the output is walked in order while the input is read with the strides
// of the permuted dims; StridedLoop merges dims that stay adjacent, so e.g. NCHW -> NHWC
// becomes a 3-D walk with a long contiguous innermost read where one exists.
#include "../broadcast.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

template <class T>
void strided_copy(const RunContext& ctx, const StridedLoop<1>& loop, const void* src, void* dst) {
  const T* x = static_cast<const T*>(src);
  T* y = static_cast<T*>(dst);
  auto body = [&](size_t b, size_t e) {
    loop.for_each_run(static_cast<int64_t>(b), static_cast<int64_t>(e),
                      [&](int64_t pos, const int64_t* off, const int64_t* step, int64_t n) {
                        const T* xs = x + off[0];
                        T* ys = y + pos;
                        const int64_t s = step[0];
                        if (s == 1) {
                          for (int64_t i = 0; i < n; ++i) ys[i] = xs[i];
                        } else {
                          for (int64_t i = 0; i < n; ++i) ys[i] = xs[i * s];
                        }
                      });
  };
  ctx.parallel_for(static_cast<size_t>(loop.total), kElementwiseGrain, std::move(body));
}

class TransposeKernel final : public OpKernel {
 public:
  TransposeKernel(const Node& node, std::vector<int64_t> perm)
      : OpKernel(node, "transpose_ref"), perm_(std::move(perm)) {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0]));
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    const Dims d = Dims::of(in[0]);
    const int r = d.rank;
    int64_t perm[MN_MAX_RANK];
    if (perm_.empty()) {
      for (int i = 0; i < r; ++i) perm[i] = r - 1 - i;
    } else {
      if (static_cast<int>(perm_.size()) != r)
        fail("perm has " + std::to_string(perm_.size()) + " entries for rank " + std::to_string(r));
      for (int i = 0; i < r; ++i) perm[i] = perm_[i];
    }
    int64_t in_strides[MN_MAX_RANK];  // dense row-major strides of X
    int64_t s = 1;
    for (int i = r - 1; i >= 0; --i) {
      in_strides[i] = s;
      s *= d[i];
    }
    Dims od;
    od.rank = r;
    int64_t strides[MN_MAX_RANK];
    for (int i = 0; i < r; ++i) {
      od[i] = d[static_cast<int>(perm[i])];
      strides[i] = in_strides[perm[i]];
    }
    check_output(out, num_outputs, 0, in[0].dtype, od);
    const int64_t* sp[1] = {strides};
    StridedLoop<1> loop;
    loop.init(od, sp);
    switch (plugin::dtype_size(in[0].dtype)) {
      case 1: strided_copy<uint8_t>(ctx, loop, in[0].data, out[0].data); break;
      case 2: strided_copy<uint16_t>(ctx, loop, in[0].data, out[0].data); break;
      case 4: strided_copy<uint32_t>(ctx, loop, in[0].data, out[0].data); break;
      case 8: strided_copy<uint64_t>(ctx, loop, in[0].data, out[0].data); break;
      default: fail(std::string("cannot transpose elements of type ") + dtype_name(in[0].dtype));
    }
  }

 private:
  std::vector<int64_t> perm_;
};

}  // namespace

double transpose_bid(const Node& node) {
  require_inputs(node, 1, 1);
  const int32_t dt = node.input(0).dtype();
  const size_t es = plugin::dtype_size(dt);
  if (es != 1 && es != 2 && es != 4 && es != 8)
    node.fail(std::string("element type ") + dtype_name(dt) + " is not supported",
              MN_ERR_UNSUPPORTED);
  const std::vector<int64_t> perm = node.attr_ints("perm");
  if (!perm.empty()) {
    if (perm.size() > MN_MAX_RANK) node.fail("perm is longer than the maximum rank");
    std::vector<bool> seen(perm.size(), false);
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
        node.fail("perm is not a permutation of 0.." + std::to_string(perm.size() - 1));
      seen[p] = true;
    }
    const mn_tensor& x = *node.input(0).t;
    if (rank_known(x) && x.rank != static_cast<int>(perm.size()))
      node.fail("perm has " + std::to_string(perm.size()) + " entries for X " + shape_str(x));
  }
  return numel_estimate(*node.input(0).t);
}

std::unique_ptr<Kernel> transpose_make(const Node& node) {
  transpose_bid(node);
  return std::make_unique<TransposeKernel>(node, node.attr_ints("perm"));
}

}  // namespace cpu_dense
}  // namespace minnow
