// What an ONNX RNN / LSTM / GRU node asks for, read and checked once: used by the shape
// function (with possibly unknown dims) and by the kernels (prepare time).
#pragma once

#include "activation.h"

#include <minnow/plugin.hpp>

#include <string>
#include <vector>

namespace minnow {
namespace ops_lstm {

enum class Cell { kRnn, kLstm, kGru };

// ONNX input / output positions (the same for the three ops; P exists only for LSTM).
enum { kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitH = 5, kInitC = 6, kP = 7 };
enum { kY = 0, kYh = 1, kYc = 2 };

struct RnnConfig {
  Cell cell = Cell::kLstm;
  int gates = 4;           // 1 (RNN), 3 (GRU z,r,h), 4 (LSTM i,o,f,c)
  int num_directions = 1;
  bool reverse = false;    // direction == "reverse" (single direction, run backwards)
  int64_t hidden = -1;     // H; -1 while unknown
  int64_t input = -1;      // I
  int64_t seq = -1, batch = -1;
  int layout = 0;          // 0: X [seq, batch, I]; 1: X [batch, seq, I]
  float clip = 0.f;        // 0: no clipping
  bool input_forget = false;       // LSTM: couple input and forget gates
  bool linear_before_reset = false; // GRU
  // Per direction: the activation functions (RNN f; GRU f, g; LSTM f, g, h).
  std::vector<std::vector<Activation>> acts;
};

// Reads and validates attributes and input ranks/dims. Fails (Node::fail, naming the
// node) on anything ONNX does not allow: unknown direction, wrong activation count,
// W/R/B/P shapes that disagree with hidden_size.
RnnConfig read_config(const plugin::Node& node, Cell cell);

Cell cell_of(const std::string& op);

}  // namespace ops_lstm
}  // namespace minnow
