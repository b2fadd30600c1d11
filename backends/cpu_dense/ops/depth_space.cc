// DepthToSpace (DCR / CRD) and SpaceToDepth, any element type: both are a reshape to 6-D,
// a transpose, and a reshape back, so the kernel is one strided copy with the output
// walked as the transposed 6-D view.
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class DepthSpaceKernel final : public OpKernel {
 public:
  DepthSpaceKernel(const Node& node, bool to_space)
      : OpKernel(node, to_space ? "depth_to_space_ref" : "space_to_depth_ref"),
        to_space_(to_space),
        b_(node.attr_int("blocksize", 0)),
        crd_(node.attr_string("mode", "DCR") == "CRD") {}

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return static_cast<double>(numel(in[0])) / 8.0;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1) fail("input missing at run time");
    const Dims xd = Dims::of(in[0]);
    if (xd.rank != 4) fail("input must be 4-D (N, C, H, W), got " + shape_str(in[0]));
    const int64_t n = xd[0], c = xd[1], h = xd[2], w = xd[3], b = b_;
    Dims od, view, src;  // od: real output; view: 6-D output walk; src: 6-D input dims
    int64_t perm[6];
    od.rank = view.rank = src.rank = 6;
    if (to_space_) {
      if (c % (b * b)) fail("channels " + std::to_string(c) + " not divisible by blocksize^2");
      const int64_t cc = c / (b * b);
      od.rank = 4;
      od[0] = n, od[1] = cc, od[2] = h * b, od[3] = w * b;
      if (crd_) {  // input (n, cc, b1, b2, h, w) -> (n, cc, h, b1, w, b2)
        const int64_t s[6] = {n, cc, b, b, h, w};
        const int64_t p[6] = {0, 1, 4, 2, 5, 3};
        std::copy(s, s + 6, src.d), std::copy(p, p + 6, perm);
      } else {  // DCR: input (n, b1, b2, cc, h, w) -> (n, cc, h, b1, w, b2)
        const int64_t s[6] = {n, b, b, cc, h, w};
        const int64_t p[6] = {0, 3, 4, 1, 5, 2};
        std::copy(s, s + 6, src.d), std::copy(p, p + 6, perm);
      }
    } else {
      if (h % b || w % b) fail("spatial dims of " + shape_str(in[0]) + " not divisible by blocksize");
      od.rank = 4;
      od[0] = n, od[1] = c * b * b, od[2] = h / b, od[3] = w / b;
      // input (n, c, h', b1, w', b2) -> (n, b1, b2, c, h', w')
      const int64_t s[6] = {n, c, h / b, b, w / b, b};
      const int64_t p[6] = {0, 3, 5, 1, 2, 4};
      std::copy(s, s + 6, src.d), std::copy(p, p + 6, perm);
    }
    check_output(out, num_outputs, 0, in[0].dtype, od);
    int64_t ss[6], strides[6];
    dense_strides(src, ss);
    for (int i = 0; i < 6; ++i) {
      view[i] = src[static_cast<int>(perm[i])];
      strides[i] = ss[perm[i]];
    }
    strided_copy_any(*this, ctx, in[0].dtype, view, strides, in[0].data, 0, out[0].data);
  }

 private:
  bool to_space_;
  int64_t b_;
  bool crd_;
};

double depth_space_bid(const Node& node) {
  require_inputs(node, 1, 1);
  require_movable(node, node.input(0).dtype());
  if (node.attr_int("blocksize", 0) < 1) node.fail("blocksize must be >= 1");
  const std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") node.fail("unknown mode '" + mode + "'");
  return numel_estimate(*node.input(0).t) / 8.0;
}

}  // namespace

double depth_to_space_bid(const Node& node) { return depth_space_bid(node); }
std::unique_ptr<Kernel> depth_to_space_make(const Node& node) {
  depth_space_bid(node);
  return std::make_unique<DepthSpaceKernel>(node, true);
}
double space_to_depth_bid(const Node& node) { return depth_space_bid(node); }
std::unique_ptr<Kernel> space_to_depth_make(const Node& node) {
  depth_space_bid(node);
  return std::make_unique<DepthSpaceKernel>(node, false);
}

}  // namespace cpu_dense
}  // namespace minnow
