// A small reverse-mode interpreter of a model graph, for distillation fine-tuning: float32
// forward over a batch keeping every intermediate, then backward from d(loss)/d(output) to
// the gradients of the trainable constants (weights and biases of Gemm / MatMul / Conv).
//
// Ops: Gemm, MatMul (constant 2-D weight), Conv (2-D, groups, strides, pads, dilations),
// Relu, LeakyRelu, Clip, Sigmoid, Tanh, MaxPool / AveragePool (2-D), GlobalAveragePool,
// Add / Mul (same shape or per-channel constant), BatchNormalization (inference form,
// statistics fixed), Flatten, Reshape, Identity, Dropout, Concat, Softmax. A model with
// another op is refused with a message naming the node. Kept plain and readable: it is
// the reference the optimised kernels are not needed for (training runs offline).
#pragma once

#include <minnow/ir.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace minnow {
namespace compress {

struct Value {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t size() const;
};

class TrainGraph {
 public:
  // Throws naming the first node it cannot differentiate.
  explicit TrainGraph(const ir::ModelIR& m);

  // Trainable constant tensors (weight / bias inputs of Gemm, MatMul, Conv; W, R, B of LSTM).
  const std::vector<int>& params() const { return params_; }
  Value& param(int t) { return consts_.at(t); }
  const Value& param_grad(int t) const { return grads_.at(t); }

  // Forward over a batch [n, sample...]; returns the (single) graph output.
  const Value& forward(const std::vector<float>& input, int64_t n);
  // Backward from d(loss)/d(output); fills param_grad (overwritten, not accumulated).
  void backward(const std::vector<float>& d_output);
  // Any tensor's value in the last forward (activation or constant); throws if unknown.
  const Value& value(int t) const { return val(t); }

 private:
  struct Step;
  const ir::ModelIR& m_;
  std::vector<int> order_;                 // node indices, topological
  std::map<int, Value> consts_;            // every constant, decoded to float
  std::map<int, Value> acts_;              // activations of the last forward
  std::map<int, Value> grads_;             // gradients (activations and params)
  std::vector<int> params_;
  int input_ = -1, output_ = -1;
  std::vector<int64_t> input_shape_;
  std::map<int, std::vector<float>> saved_;  // per LSTM node: gate values of the last forward

  const Value& val(int t) const;
  Value& grad(int t, const std::vector<int64_t>& shape);
  void forward_node(const ir::Node& n);
  void backward_node(const ir::Node& n);
  // LSTM (train_lstm.cc): one direction, default activations, through time (BPTT).
  void forward_lstm(const ir::Node& n);
  void backward_lstm(const ir::Node& n);
};

// Why an LSTM node cannot be trained ("" when it can): the forms train_lstm.cc implements.
std::string lstm_untrainable(const ir::ModelIR& m, const ir::Node& n);

}  // namespace compress
}  // namespace minnow
