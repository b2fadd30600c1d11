// AveragePool (1-3 spatial dims): pads, strides, auto_pad, ceil_mode (opset 10+),
// count_include_pad (opset 7+; default 0: divide by the taps inside the input), dilations
// (opset 19 adds them; accepted here too).
#include "../ops.h"
#include "../pool.h"

namespace minnow {
namespace cpu_dense {

double averagepool_bid(const Node& node) {
  SpatialAttrs a = check_pool(node, true);
  double taps = 1;
  for (int i = 0; i < a.nsp; ++i) taps *= static_cast<double>(a.kernel[i]);
  return numel_estimate(*node.output(0).t) * taps;
}

std::unique_ptr<Kernel> averagepool_make(const Node& node) {
  SpatialAttrs a = check_pool(node, true);
  return std::make_unique<PoolKernel>(node, pool_name(PoolKind::kAverage, a.nsp), a,
                                      PoolKind::kAverage,
                                      node.attr_int("count_include_pad", 0) != 0);
}

}  // namespace cpu_dense
}  // namespace minnow
