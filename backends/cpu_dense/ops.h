// The op table of the cpu_dense backend: one entry per ONNX op (default domain "").
//
// Each op lives in its own file under ops/ and provides two functions:
//   double <op>_bid(const Node&)            validates dtypes/attributes/known shapes and
//                                           returns the estimated flops; throws
//                                           PluginError (with the reason) to refuse.
//   std::unique_ptr<Kernel> <op>_make(const Node&)
//                                           the prepared kernel; validates again (the core
//                                           may prepare without bidding) and throws on bad
//                                           attributes.
#pragma once

#include <cstddef>

#include "common.h"

namespace minnow {
namespace cpu_dense {

// The newest opset whose semantics these kernels were written (and tested) against.
constexpr int kMaxOpset = 17;

using BidFn = double (*)(const Node&);
using MakeFn = std::unique_ptr<Kernel> (*)(const Node&);

struct OpEntry {
  const char* op;
  int since_version;  // node.op_version must lie in [since_version, max_version]
  int max_version;
  BidFn bid;
  MakeFn make;
};

// The whole table (static storage, constant-initialised).
const OpEntry* op_table(size_t* count);
// The entry for `op` that accepts `version`; null if none. `op_known` (optional) tells
// whether the op exists at another version.
const OpEntry* find_op(const char* op, int version, bool* op_known = nullptr);

#define MINNOW_CPU_DENSE_DECLARE_OP(fn) \
  double fn##_bid(const Node& node);    \
  std::unique_ptr<Kernel> fn##_make(const Node& node);

// Phase 1
MINNOW_CPU_DENSE_DECLARE_OP(gemm)
MINNOW_CPU_DENSE_DECLARE_OP(matmul)
MINNOW_CPU_DENSE_DECLARE_OP(conv)
MINNOW_CPU_DENSE_DECLARE_OP(relu)
MINNOW_CPU_DENSE_DECLARE_OP(add)
MINNOW_CPU_DENSE_DECLARE_OP(maxpool)
MINNOW_CPU_DENSE_DECLARE_OP(softmax)
MINNOW_CPU_DENSE_DECLARE_OP(reshape)
MINNOW_CPU_DENSE_DECLARE_OP(flatten)
// Phase 2
MINNOW_CPU_DENSE_DECLARE_OP(sub)
MINNOW_CPU_DENSE_DECLARE_OP(mul)
MINNOW_CPU_DENSE_DECLARE_OP(div)
MINNOW_CPU_DENSE_DECLARE_OP(pow)
MINNOW_CPU_DENSE_DECLARE_OP(max)
MINNOW_CPU_DENSE_DECLARE_OP(min)
MINNOW_CPU_DENSE_DECLARE_OP(sum)
MINNOW_CPU_DENSE_DECLARE_OP(equal)
MINNOW_CPU_DENSE_DECLARE_OP(less)
MINNOW_CPU_DENSE_DECLARE_OP(greater)
MINNOW_CPU_DENSE_DECLARE_OP(sigmoid)
MINNOW_CPU_DENSE_DECLARE_OP(tanh)
MINNOW_CPU_DENSE_DECLARE_OP(clip)
MINNOW_CPU_DENSE_DECLARE_OP(leaky_relu)
MINNOW_CPU_DENSE_DECLARE_OP(prelu)
MINNOW_CPU_DENSE_DECLARE_OP(hard_sigmoid)
MINNOW_CPU_DENSE_DECLARE_OP(hard_swish)
MINNOW_CPU_DENSE_DECLARE_OP(elu)
MINNOW_CPU_DENSE_DECLARE_OP(softplus)
MINNOW_CPU_DENSE_DECLARE_OP(exp)
MINNOW_CPU_DENSE_DECLARE_OP(log)
MINNOW_CPU_DENSE_DECLARE_OP(sqrt)
MINNOW_CPU_DENSE_DECLARE_OP(neg)
MINNOW_CPU_DENSE_DECLARE_OP(abs)
MINNOW_CPU_DENSE_DECLARE_OP(identity)
MINNOW_CPU_DENSE_DECLARE_OP(dropout)
MINNOW_CPU_DENSE_DECLARE_OP(batchnorm)
MINNOW_CPU_DENSE_DECLARE_OP(averagepool)
MINNOW_CPU_DENSE_DECLARE_OP(global_averagepool)
MINNOW_CPU_DENSE_DECLARE_OP(global_maxpool)
MINNOW_CPU_DENSE_DECLARE_OP(logsoftmax)
MINNOW_CPU_DENSE_DECLARE_OP(concat)
MINNOW_CPU_DENSE_DECLARE_OP(transpose)
MINNOW_CPU_DENSE_DECLARE_OP(squeeze)
MINNOW_CPU_DENSE_DECLARE_OP(unsqueeze)
// Issue 3: ONNX coverage
MINNOW_CPU_DENSE_DECLARE_OP(gather)
MINNOW_CPU_DENSE_DECLARE_OP(slice)
MINNOW_CPU_DENSE_DECLARE_OP(constant_of_shape)
MINNOW_CPU_DENSE_DECLARE_OP(expand)
MINNOW_CPU_DENSE_DECLARE_OP(cast)
MINNOW_CPU_DENSE_DECLARE_OP(split)
MINNOW_CPU_DENSE_DECLARE_OP(where)
MINNOW_CPU_DENSE_DECLARE_OP(not)
MINNOW_CPU_DENSE_DECLARE_OP(pad)
MINNOW_CPU_DENSE_DECLARE_OP(tile)
MINNOW_CPU_DENSE_DECLARE_OP(reduce_mean)
MINNOW_CPU_DENSE_DECLARE_OP(reduce_max)
MINNOW_CPU_DENSE_DECLARE_OP(reduce_sum)
MINNOW_CPU_DENSE_DECLARE_OP(argmax)
MINNOW_CPU_DENSE_DECLARE_OP(topk)
MINNOW_CPU_DENSE_DECLARE_OP(depth_to_space)
MINNOW_CPU_DENSE_DECLARE_OP(space_to_depth)
MINNOW_CPU_DENSE_DECLARE_OP(instance_norm)
MINNOW_CPU_DENSE_DECLARE_OP(lrn)
MINNOW_CPU_DENSE_DECLARE_OP(conv_transpose)
MINNOW_CPU_DENSE_DECLARE_OP(resize)
MINNOW_CPU_DENSE_DECLARE_OP(upsample)

#undef MINNOW_CPU_DENSE_DECLARE_OP

// The backend over the table (what the plugin registers; tests drive it directly).
std::unique_ptr<plugin::Backend> make_backend();

}  // namespace cpu_dense
}  // namespace minnow
