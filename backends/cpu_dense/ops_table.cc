#include <cstring>

#include "ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

// Versions: op_version is checked against [since, max]. Ops whose earliest ONNX versions
// differ only by attributes these kernels ignore (consumed_inputs, is_test) or handle
// (legacy broadcast/axis, Softmax's 2-D coercion, Reshape's shape attribute) start at 1.
// Constant-initialised: no global constructor runs when the plugin is loaded.
constexpr OpEntry kOps[] = {
    // Phase 1
    {"Gemm", 1, kMaxOpset, gemm_bid, gemm_make},
    {"MatMul", 1, kMaxOpset, matmul_bid, matmul_make},
    {"Conv", 1, kMaxOpset, conv_bid, conv_make},
    {"Relu", 1, kMaxOpset, relu_bid, relu_make},
    {"Add", 1, kMaxOpset, add_bid, add_make},
    {"MaxPool", 1, kMaxOpset, maxpool_bid, maxpool_make},
    {"Softmax", 1, kMaxOpset, softmax_bid, softmax_make},
    {"Reshape", 1, kMaxOpset, reshape_bid, reshape_make},
    {"Flatten", 1, kMaxOpset, flatten_bid, flatten_make},
    // Phase 2
    {"Sub", 1, kMaxOpset, sub_bid, sub_make},
    {"Mul", 1, kMaxOpset, mul_bid, mul_make},
    {"Div", 1, kMaxOpset, div_bid, div_make},
    {"Pow", 1, kMaxOpset, pow_bid, pow_make},
    {"Max", 1, kMaxOpset, max_bid, max_make},
    {"Min", 1, kMaxOpset, min_bid, min_make},
    {"Sum", 1, kMaxOpset, sum_bid, sum_make},
    {"Equal", 1, kMaxOpset, equal_bid, equal_make},
    {"Less", 1, kMaxOpset, less_bid, less_make},
    {"Greater", 1, kMaxOpset, greater_bid, greater_make},
    {"Sigmoid", 1, kMaxOpset, sigmoid_bid, sigmoid_make},
    {"Tanh", 1, kMaxOpset, tanh_bid, tanh_make},
    {"Clip", 1, kMaxOpset, clip_bid, clip_make},
    {"LeakyRelu", 1, kMaxOpset, leaky_relu_bid, leaky_relu_make},
    {"PRelu", 1, kMaxOpset, prelu_bid, prelu_make},
    {"HardSigmoid", 1, kMaxOpset, hard_sigmoid_bid, hard_sigmoid_make},
    {"HardSwish", 14, kMaxOpset, hard_swish_bid, hard_swish_make},
    {"Elu", 1, kMaxOpset, elu_bid, elu_make},
    {"Softplus", 1, kMaxOpset, softplus_bid, softplus_make},
    {"Exp", 1, kMaxOpset, exp_bid, exp_make},
    {"Log", 1, kMaxOpset, log_bid, log_make},
    {"Sqrt", 1, kMaxOpset, sqrt_bid, sqrt_make},
    {"Neg", 1, kMaxOpset, neg_bid, neg_make},
    {"Abs", 1, kMaxOpset, abs_bid, abs_make},
    {"Identity", 1, kMaxOpset, identity_bid, identity_make},
    {"Dropout", 1, kMaxOpset, dropout_bid, dropout_make},
    {"BatchNormalization", 1, kMaxOpset, batchnorm_bid, batchnorm_make},
    {"AveragePool", 1, kMaxOpset, averagepool_bid, averagepool_make},
    {"GlobalAveragePool", 1, kMaxOpset, global_averagepool_bid, global_averagepool_make},
    {"GlobalMaxPool", 1, kMaxOpset, global_maxpool_bid, global_maxpool_make},
    {"LogSoftmax", 1, kMaxOpset, logsoftmax_bid, logsoftmax_make},
    {"Concat", 1, kMaxOpset, concat_bid, concat_make},
    {"Transpose", 1, kMaxOpset, transpose_bid, transpose_make},
    {"Squeeze", 1, kMaxOpset, squeeze_bid, squeeze_make},
    {"Unsqueeze", 1, kMaxOpset, unsqueeze_bid, unsqueeze_make},
    // Issue 3: ONNX coverage
    {"Gather", 1, kMaxOpset, gather_bid, gather_make},
    {"Slice", 1, kMaxOpset, slice_bid, slice_make},
    {"ConstantOfShape", 9, kMaxOpset, constant_of_shape_bid, constant_of_shape_make},
    {"Expand", 8, kMaxOpset, expand_bid, expand_make},
    {"Cast", 6, kMaxOpset, cast_bid, cast_make},
    {"Split", 2, kMaxOpset, split_bid, split_make},
    {"Where", 9, kMaxOpset, where_bid, where_make},
    {"Not", 1, kMaxOpset, not_bid, not_make},
    {"Pad", 2, kMaxOpset, pad_bid, pad_make},
    {"Tile", 6, kMaxOpset, tile_bid, tile_make},
    {"ReduceMean", 1, kMaxOpset, reduce_mean_bid, reduce_mean_make},
    {"ReduceMax", 1, kMaxOpset, reduce_max_bid, reduce_max_make},
    {"ReduceSum", 1, kMaxOpset, reduce_sum_bid, reduce_sum_make},
    {"ArgMax", 1, kMaxOpset, argmax_bid, argmax_make},
    {"TopK", 1, kMaxOpset, topk_bid, topk_make},
    {"DepthToSpace", 1, kMaxOpset, depth_to_space_bid, depth_to_space_make},
    {"SpaceToDepth", 1, kMaxOpset, space_to_depth_bid, space_to_depth_make},
    {"InstanceNormalization", 1, kMaxOpset, instance_norm_bid, instance_norm_make},
    {"LRN", 1, kMaxOpset, lrn_bid, lrn_make},
    {"ConvTranspose", 1, kMaxOpset, conv_transpose_bid, conv_transpose_make},
    {"Resize", 10, kMaxOpset, resize_bid, resize_make},
    {"Upsample", 7, kMaxOpset, upsample_bid, upsample_make},
};

}  // namespace

const OpEntry* op_table(size_t* count) {
  *count = sizeof(kOps) / sizeof(kOps[0]);
  return kOps;
}

const OpEntry* find_op(const char* op, int version, bool* op_known) {
  if (op_known) *op_known = false;
  if (!op) return nullptr;
  for (const OpEntry& e : kOps) {
    if (std::strcmp(e.op, op) != 0) continue;
    if (op_known) *op_known = true;
    if (version >= e.since_version && version <= e.max_version) return &e;
  }
  return nullptr;
}

}  // namespace cpu_dense
}  // namespace minnow
