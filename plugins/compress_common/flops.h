// Floating-point operations per sample of the weight layers (2 per multiply-add of Conv /
// Gemm / MatMul; everything else is cheap next to them), from tensor shapes (a forward
// pass's, or the engine's shape inference). Used by prune-channels and `minnow compress`.
#pragma once

#include <minnow/ir.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace minnow {
namespace compress {

using ShapeOf = std::function<std::vector<int64_t>(int)>;

// 0 for nodes that are not Conv / Gemm / MatMul / LSTM or whose shapes are unknown (dim 0,
// the batch, is ignored; an LSTM's X is [T, N, I]: its batch is dim 1). LSTM: the gate
// GEMMs, 2 * T * 4H * (I + H).
int64_t node_flops(const ir::ModelIR& m, const ir::Node& n, const ShapeOf& shape);
// The part of node_flops that multiplies by weight tensor `t` (an LSTM's W or R; the
// whole node's for the others).
int64_t weight_flops(const ir::ModelIR& m, const ir::Node& n, int t, const ShapeOf& shape);
int64_t model_flops(const ir::ModelIR& m, const ShapeOf& shape);

}  // namespace compress
}  // namespace minnow
