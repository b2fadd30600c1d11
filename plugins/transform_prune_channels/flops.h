// Floating-point operations per sample of the layers channel pruning shrinks (2 per
// multiply-add of Conv / Gemm / MatMul; everything else is cheap next to them), from the
// activation shapes of a forward pass.
#pragma once

#include <minnow/ir.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace minnow {
namespace compress {
namespace channels {

using ShapeOf = std::function<std::vector<int64_t>(int)>;

// 0 for nodes that are not Conv / Gemm / MatMul or whose shapes are unknown.
int64_t node_flops(const ir::ModelIR& m, const ir::Node& n, const ShapeOf& shape);
int64_t model_flops(const ir::ModelIR& m, const ShapeOf& shape);

}  // namespace channels
}  // namespace compress
}  // namespace minnow
