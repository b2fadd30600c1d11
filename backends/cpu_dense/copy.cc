#include "copy.h"

namespace minnow {
namespace cpu_dense {

void parallel_copy(const RunContext& ctx, void* dst, const void* src, size_t bytes) {
  if (dst == src || bytes == 0) return;
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  // Chunks of about 1 MiB: a memcpy that size is long enough to pay for a task.
  ctx.parallel_for(bytes, size_t(1) << 20,
                   [&](size_t b, size_t e) { std::memcpy(d + b, s + b, e - b); });
}

double copy_bid(const Node& node, int min_inputs, int max_inputs) {
  require_inputs(node, min_inputs, max_inputs);
  const int32_t dt = node.input(0).dtype();
  if (plugin::dtype_size(dt) == 0)
    node.fail(std::string("element type ") + dtype_name(dt) + " is not supported",
              MN_ERR_UNSUPPORTED);
  if (node.output(0).dtype() != MN_UNDEFINED && node.output(0).dtype() != dt)
    node.fail(std::string("output type ") + dtype_name(node.output(0).dtype()) +
              " differs from input type " + dtype_name(dt));
  return numel_estimate(*node.input(0).t) * plugin::dtype_size(dt) / 8.0;
}

double copy_bid_int64_arg(const Node& node, int min_inputs, int max_inputs) {
  const double f = copy_bid(node, min_inputs, max_inputs);
  if (node.has_input(1)) require_input_dtype(node, 1, {MN_I64});
  return f;
}

std::unique_ptr<Kernel> copy_kernel(const Node& node, double (*bid)(const Node&),
                                    const char* kernel_name, bool same_shape) {
  bid(node);
  return std::make_unique<CopyKernel>(node, kernel_name, same_shape);
}

}  // namespace cpu_dense
}  // namespace minnow
