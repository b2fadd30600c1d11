// GlobalAveragePool: the mean of each (n, c) plane.
#include "../global_pool.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double global_averagepool_bid(const Node& node) { return global_pool_bid(node); }

std::unique_ptr<Kernel> global_averagepool_make(const Node& node) {
  global_pool_bid(node);
  return std::make_unique<GlobalPoolKernel>(node, "f32_global_avgpool__hwy", false);
}

}  // namespace cpu_dense
}  // namespace minnow
