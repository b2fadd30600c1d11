#include "pool.h"

namespace minnow {
namespace cpu_dense {

SpatialAttrs check_pool(const Node& node, bool allow_ceil_mode,
                        std::initializer_list<int32_t> dtypes) {
  require_inputs(node, 1, 1);
  require_input_dtype(node, 0, dtypes);
  const std::vector<int64_t> ks = node.attr_ints("kernel_shape");
  if (ks.empty()) node.fail("attribute kernel_shape is required");
  const int nsp = static_cast<int>(ks.size());
  const mn_tensor& x = *node.input(0).t;
  if (rank_known(x) && x.rank != nsp + 2)
    node.fail("X " + shape_str(x) + " must have rank " + std::to_string(nsp + 2) + " for a " +
              std::to_string(nsp) + "-D kernel_shape");
  SpatialAttrs a = parse_spatial(node, nsp, nullptr, allow_ceil_mode);
  // With both shapes known, catch an output shape the attributes cannot produce now
  // rather than at run time.
  const mn_tensor& y = *node.output(0).t;
  if (TensorRef{&x}.shape_known() && TensorRef{&y}.shape_known() && y.rank == x.rank) {
    Axis ax[kMaxSpatial];
    std::string err = resolve_geometry(a, x.dims + 2, y.dims + 2, ax);
    if (!err.empty()) node.fail(err);
  }
  return a;
}

}  // namespace cpu_dense
}  // namespace minnow
