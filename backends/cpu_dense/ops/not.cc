// Not: logical negation of a bool tensor (bytes 0/1).
#include "../unary.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {
struct NotOp {
  uint8_t operator()(uint8_t x) const { return x ? 0 : 1; }
};
}  // namespace

double not_bid(const Node& node) { return unary_bid(node, {MN_BOOL}); }

std::unique_ptr<Kernel> not_make(const Node& node) {
  not_bid(node);
  return make_unary<uint8_t>(node, "bool_not_ref", NotOp());
}

}  // namespace cpu_dense
}  // namespace minnow
