// The graph side of channel pruning: which sets of channels can be removed, and the
// physical edit that removes them from the producers, the per-channel ops between and
// the consumers' input columns.
//
// A channel group is one channel index space shared by several activations: it starts
// at a producer layer (Conv with group 1, Gemm, or MatMul with a constant weight) and
// spreads through ops that keep channels apart: elementwise activations, pools,
// BatchNormalization, a depthwise Conv (its channels follow its input, so it drops the
// same ones), Add of two activations of the group (a residual: channel c of the sum is
// channel c of each branch, so every branch's producer must lose c too; the Add's other
// input is followed back to its producers) and one Flatten (after which channel c is the
// consumer's columns [c*hw, (c+1)*hw)). It ends at consumer layers (Conv with group 1,
// Gemm, MatMul with a constant weight reading the activation as input 0); an activation
// may have several. A group that reaches anything else (a Concat, a Reshape, a graph
// input or output, a broadcasting Add) is left alone, so the classifier's outputs are
// never removed. A layer can be consumer and producer of the same group (the pointwise
// Conv of a residual block reads the block input's channels and writes into its sum).
#pragma once

#include <minnow/ir.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace minnow {
namespace compress {
namespace channels {

struct Consumer {
  int node = -1;
  int64_t group = 1;  // weight columns per channel: kh*kw (Conv) or hw (after Flatten)
};

struct Group {
  int64_t channels = 0;
  std::vector<int> producers;       // node order
  std::vector<int> members;         // per-channel nodes between (BN, depthwise Conv, ...), node order
  std::vector<int> tensors;         // activations carrying the channels
  std::vector<int64_t> tensor_hw;   // per tensor: 0 = channels on axis 1, else hw (after Flatten)
  std::vector<Consumer> consumers;  // node order
  std::vector<std::string> weights; // producers' weight tensor names (per-layer options use them)
};

// Every prunable group, ordered by first producer (ONNX graphs are stored topologically).
// `act_shape(t)` is tensor t's shape in a forward pass (empty when unknown): it gives the
// channel axis, Flatten's hw, and rules out broadcasting Adds.
std::vector<Group> find_groups(const ir::ModelIR& m, const std::function<std::vector<int64_t>(int)>& act_shape);

// A consumer's weight as a matrix [outputs, channels * group] (columns grouped by
// channel), and writing such a matrix back in the tensor's own layout.
std::vector<float> consumer_matrix(const ir::ModelIR& m, const Consumer& c, int64_t channels, int64_t* outputs);
void set_consumer_matrix(ir::ModelIR& m, const Consumer& c, const std::vector<float>& w, int64_t outputs,
                         int64_t channels);
// The consumer's bias (zeros when it has none); can_have_bias: Conv and Gemm can take one.
std::vector<float> consumer_bias(const ir::ModelIR& m, const Consumer& c, int64_t outputs);
bool consumer_can_have_bias(const ir::ModelIR& m, const Consumer& c, int64_t channels);
void set_consumer_bias(ir::ModelIR& m, const Consumer& c, const std::vector<float>& b);

// Keeps only channels `keep` (sorted) everywhere in the group: the producers' weight rows
// and biases, the members' per-channel parameters, the consumers' columns (kept as they
// were: re-fitted afterwards) and the declared shapes.
void shrink_group(ir::ModelIR& m, const Group& g, const std::vector<int64_t>& keep);

}  // namespace channels
}  // namespace compress
}  // namespace minnow
