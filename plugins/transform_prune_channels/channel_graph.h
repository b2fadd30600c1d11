// The graph side of channel pruning: which layers' output channels can be removed, and
// the physical edit that removes them from the producer, the per-channel ops after it
// and the consumer's input columns.
//
// A prunable pair is a producer (Conv with group 1, Gemm, or MatMul with a constant
// weight) whose output reaches exactly one consumer layer (Conv with group 1, Gemm or
// MatMul with a constant weight) through a single-use chain of ops that keep channels
// apart: elementwise activations, pools, BatchNormalization, a depthwise Conv (its
// channels follow its input, so it drops the same ones) and one Flatten (after which
// channel c is the consumer's columns [c*hw, (c+1)*hw)). A layer whose output reaches an
// Add, a Concat, a graph output or two consumers is left alone: the channels there would
// have to be pruned jointly with another branch.
#pragma once

#include <minnow/ir.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace minnow {
namespace compress {
namespace channels {

struct Pair {
  int producer = -1;
  std::vector<int> chain;  // pass-through nodes, in order
  int consumer = -1;
  int64_t channels = 0;    // producer's output channels
  int64_t group = 1;       // consumer weight columns per channel: kh*kw (Conv) or hw (after Flatten)
  int64_t hw = 1;          // Flatten in the chain: spatial elements per channel (else 1)
  int flatten = -1;        // position of the Flatten in `chain`, or -1
  std::string weight;      // producer's weight tensor name (per-layer options use it)
};

// Every prunable pair, producers in node order (ONNX graphs are stored topologically).
// `act_shape(t)` is tensor t's shape in a forward pass (empty when unknown): it gives
// the producer's channel axis and Flatten's hw.
std::vector<Pair> find_pairs(const ir::ModelIR& m, const std::function<std::vector<int64_t>(int)>& act_shape);

// The consumer's weight as a matrix [outputs, channels * group] (columns grouped by
// channel), and writing such a matrix back in the tensor's own layout.
std::vector<float> consumer_matrix(const ir::ModelIR& m, const Pair& p, int64_t* outputs);
void set_consumer_matrix(ir::ModelIR& m, const Pair& p, const std::vector<float>& w, int64_t outputs,
                         int64_t channels);
// The consumer's bias (zeros when it has none); can_have_bias: Conv and Gemm can take one.
std::vector<float> consumer_bias(const ir::ModelIR& m, const Pair& p, int64_t outputs);
bool consumer_can_have_bias(const ir::ModelIR& m, const Pair& p);
void set_consumer_bias(ir::ModelIR& m, const Pair& p, const std::vector<float>& b);

// Keeps only channels `keep` (sorted) in the producer's weight rows and bias, in the
// chain's per-channel parameters and declared shapes. The consumer's columns are set
// separately (set_consumer_matrix), since they are re-fitted.
void shrink_producer_and_chain(ir::ModelIR& m, const Pair& p, const std::vector<int64_t>& keep);

}  // namespace channels
}  // namespace compress
}  // namespace minnow
