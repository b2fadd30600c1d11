// Flatten: [d0..dn) -> [prod(d[:axis]), prod(d[axis:])], axis in [-r, r] (default 1).
#include "../copy.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class FlattenKernel final : public CopyKernel {
 public:
  FlattenKernel(const Node& node, int64_t axis)
      : CopyKernel(node, "flatten_copy_ref"), axis_(axis) {}

 protected:
  bool expected_output(const mn_tensor& in, Dims* out) const override {
    const Dims d = Dims::of(in);
    if (axis_ < -d.rank || axis_ > d.rank)
      fail("axis " + std::to_string(axis_) + " out of range for rank " + std::to_string(d.rank));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + d.rank : axis_);
    out->rank = 2;
    out->d[0] = d.prod(0, axis);
    out->d[1] = d.prod(axis, d.rank);
    return true;
  }

 private:
  int64_t axis_;
};

}  // namespace

double flatten_bid(const Node& node) {
  double f = copy_bid(node, 1, 1);
  const int64_t axis = node.attr_int("axis", 1);
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x) && (axis < -x.rank || axis > x.rank))
    node.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(x.rank));
  return f;
}

std::unique_ptr<Kernel> flatten_make(const Node& node) {
  flatten_bid(node);
  return std::make_unique<FlattenKernel>(node, node.attr_int("axis", 1));
}

}  // namespace cpu_dense
}  // namespace minnow
