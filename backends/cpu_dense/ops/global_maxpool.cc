// GlobalMaxPool: the maximum of each (n, c) plane (NaN propagates).
#include "../global_pool.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

double global_maxpool_bid(const Node& node) { return global_pool_bid(node); }

std::unique_ptr<Kernel> global_maxpool_make(const Node& node) {
  global_pool_bid(node);
  return std::make_unique<GlobalPoolKernel>(node, "f32_global_maxpool_ref", true);
}

}  // namespace cpu_dense
}  // namespace minnow
