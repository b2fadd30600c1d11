// Helpers for transforms that edit a ModelIR: decoded constants, producers/consumers,
// replacing a constant's data, dropping what no longer is referenced, and the list of
// weight matrices that compression works on.
#pragma once

#include <minnow/ir.h>
#include <minnow/types.h>

#include <string>
#include <vector>

namespace minnow {
namespace compress {

// Dense float32 value of constant tensor `t` (any encoding; throws naming the tensor).
Tensor constant_f32(const ir::ModelIR& m, int t);
bool is_constant(const ir::ModelIR& m, int t);

// Replaces tensor `t`'s data by a plain dense copy of `value` (shape and dtype from it).
void set_dense(ir::ModelIR& m, int t, const Tensor& value);
// Adds a dense constant tensor under a name not yet used (based on `base`); returns its index.
int add_constant(ir::ModelIR& m, const std::string& base, const Tensor& value);
uint32_t add_buffer(ir::ModelIR& m, const void* data, size_t size);

int producer_of(const ir::Graph& g, int t);            // node index or -1
std::vector<int> consumers_of(const ir::Graph& g, int t);  // node indices (may repeat)
bool is_graph_output(const ir::Graph& g, int t);

// Bytes a constant takes in the file (its buffers plus centroids / code lengths).
uint64_t stored_bytes(const ir::ModelIR& m, int t);

// Removes nodes marked in `dead`, then every tensor and buffer nothing refers to, and
// renumbers the rest.
void remove_nodes(ir::ModelIR& m, const std::vector<bool>& dead);
void compact(ir::ModelIR& m);

// A weight matrix that compression works on: input 1 of Gemm / MatMul / Conv, inputs 1
// and 2 (W, R) of LSTM / GRU / RNN, when it is a constant. `rows` x `cols` is its 2-D view as stored (first dim x the rest);
// `out_axis` is the axis of output channels (per-channel quantization).
struct WeightRef {
  int node = -1;
  int tensor = -1;
  std::string name;   // tensor name
  std::string op;
  int64_t rows = 0, cols = 0;
  int out_axis = 0;
};
std::vector<WeightRef> weight_tensors(const ir::ModelIR& m);

// Bias constants: input 2 of Gemm / Conv, input 3 of LSTM / GRU / RNN.
std::vector<int> bias_tensors(const ir::ModelIR& m);

std::string json_escape(const std::string& s);

}  // namespace compress
}  // namespace minnow
