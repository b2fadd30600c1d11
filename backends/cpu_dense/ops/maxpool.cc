// MaxPool (1-3 spatial dims): pads, strides, dilations, auto_pad, ceil_mode.
// storage_order only affects the Indices output, which this backend does not produce
// (bid refuses a node that asks for it).
#include "../ops.h"
#include "../pool.h"

namespace minnow {
namespace cpu_dense {

double maxpool_bid(const Node& node) {
  SpatialAttrs a = check_pool(node, true);
  if (node.num_outputs() > 1 && present(*node.output(1).t))
    node.fail("the Indices output is not implemented by cpu_dense", MN_ERR_UNSUPPORTED);
  double taps = 1;
  for (int i = 0; i < a.nsp; ++i) taps *= static_cast<double>(a.kernel[i]);
  return numel_estimate(*node.output(0).t) * taps;
}

std::unique_ptr<Kernel> maxpool_make(const Node& node) {
  maxpool_bid(node);
  SpatialAttrs a = check_pool(node, true);
  return std::make_unique<PoolKernel>(node, pool_name(PoolKind::kMax, a.nsp), a, PoolKind::kMax,
                                      false);
}

}  // namespace cpu_dense
}  // namespace minnow
