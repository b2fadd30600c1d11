#include "binary.h"

namespace minnow {
namespace cpu_dense {

double binary_bid(const Node& node, std::initializer_list<int32_t> dtypes) {
  require_inputs(node, 2, 2);
  require_input_dtype(node, 0, dtypes);
  require_same_dtype(node, 0, 1);
  const TensorRef a = node.input(0), b = node.input(1);
  if (a.shape_known() && b.shape_known()) {
    Dims da = Dims::of(*a.t), db = Dims::of(*b.t), o;
    if (!LegacyBroadcast::parse(node).apply(da, &db) || !broadcast_dims(da, db, &o))
      node.fail("shapes " + shape_str(*a.t) + " and " + shape_str(*b.t) + " are not broadcastable");
  }
  return numel_estimate(*node.output(0).t);
}

double variadic_bid(const Node& node, std::initializer_list<int32_t> dtypes) {
  require_inputs(node, 1, -1);
  require_input_dtype(node, 0, dtypes);
  bool known = true;
  Dims o = Dims::of(*node.input(0).t);
  for (int k = 0; k < node.num_inputs(); ++k) {
    if (!node.has_input(k)) node.fail("input " + std::to_string(k) + " is missing");
    require_same_dtype(node, 0, k);
    known = known && node.input(k).shape_known();
    if (known && !broadcast_dims(o, Dims::of(*node.input(k).t), &o))
      node.fail("input " + std::to_string(k) + " " + shape_str(*node.input(k).t) +
                " does not broadcast with the others");
  }
  return numel_estimate(*node.output(0).t) * std::max(1, node.num_inputs() - 1);
}

}  // namespace cpu_dense
}  // namespace minnow
