#include "rnn_config.h"

#include <stdexcept>

namespace minnow {
namespace ops_lstm {

using plugin::Node;
using plugin::TensorRef;

Cell cell_of(const std::string& op) {
  if (op == "RNN") return Cell::kRnn;
  if (op == "GRU") return Cell::kGru;
  return Cell::kLstm;
}

namespace {

std::string dims_str(const TensorRef& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank(); ++i) s += (i ? "," : "") + std::to_string(t.dim(i));
  return s + "]";
}

// Checks a known dim against an expected (known) value.
void expect_dim(const Node& n, const char* what, const TensorRef& t, int axis, int64_t want) {
  int64_t d = t.dim(axis);
  if (d >= 0 && want >= 0 && d != want)
    n.fail(std::string(what) + " has shape " + dims_str(t) + ": dim " + std::to_string(axis) +
           " should be " + std::to_string(want));
}

void expect_rank(const Node& n, const char* what, const TensorRef& t, int rank) {
  if (t.rank() >= 0 && t.rank() != rank)
    n.fail(std::string(what) + " must have rank " + std::to_string(rank) + ", got " + dims_str(t));
}

}  // namespace

RnnConfig read_config(const Node& n, Cell cell) {
  RnnConfig c;
  c.cell = cell;
  c.gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  const char* x_name = "input X";
  for (int i : {kX, kW, kR})
    if (!n.has_input(i)) n.fail("needs inputs X, W and R (input " + std::to_string(i) + " is missing)");
  TensorRef x = n.input(kX), w = n.input(kW), r = n.input(kR);
  for (int i = 0; i < n.num_inputs(); ++i)
    if (n.has_input(i) && i != kSeqLens && n.input(i).dtype() != MN_F32)
      n.fail("input " + std::to_string(i) + " must be float32 (only float32 is supported)");
  expect_rank(n, x_name, x, 3);
  expect_rank(n, "W", w, 3);
  expect_rank(n, "R", r, 3);

  std::string dir = n.attr_string("direction", "forward");
  if (dir == "forward") c.num_directions = 1;
  else if (dir == "reverse") { c.num_directions = 1; c.reverse = true; }
  else if (dir == "bidirectional") c.num_directions = 2;
  else n.fail("direction '" + dir + "' is not forward, reverse or bidirectional");

  c.layout = int(n.attr_int("layout", 0));
  if (c.layout != 0 && c.layout != 1) n.fail("layout must be 0 or 1, got " + std::to_string(c.layout));
  c.clip = n.attr_float("clip", 0.f);
  if (n.has_attr("clip") && !(c.clip > 0.f)) n.fail("clip must be positive");
  c.input_forget = n.attr_int("input_forget", 0) != 0;
  c.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;
  if (cell != Cell::kLstm && n.num_inputs() > kP && n.has_input(kP))
    n.fail("has a peephole input P, which only LSTM takes");

  const int64_t G = c.gates;
  int64_t H = n.attr_int("hidden_size", -1);
  if (n.has_attr("hidden_size") && H <= 0) n.fail("hidden_size must be positive");
  if (H < 0 && r.rank() == 3 && r.dim(2) >= 0) H = r.dim(2);
  if (H < 0 && w.rank() == 3 && w.dim(1) >= 0) {
    if (w.dim(1) % G) n.fail("W dim 1 (" + std::to_string(w.dim(1)) + ") is not a multiple of " + std::to_string(G));
    H = w.dim(1) / G;
  }
  c.hidden = H;
  if (x.rank() == 3) {
    c.seq = x.dim(c.layout == 0 ? 0 : 1);
    c.batch = x.dim(c.layout == 0 ? 1 : 0);
    c.input = x.dim(2);
  }
  const int64_t D = c.num_directions, B = c.batch;
  expect_dim(n, "W", w, 0, D);
  expect_dim(n, "W", w, 1, H < 0 ? -1 : G * H);
  expect_dim(n, "W", w, 2, c.input);
  expect_dim(n, "R", r, 0, D);
  expect_dim(n, "R", r, 1, H < 0 ? -1 : G * H);
  expect_dim(n, "R", r, 2, H);
  if (n.has_input(kB)) {
    expect_rank(n, "B", n.input(kB), 2);
    expect_dim(n, "B", n.input(kB), 0, D);
    expect_dim(n, "B", n.input(kB), 1, H < 0 ? -1 : 2 * G * H);
  }
  if (n.has_input(kSeqLens)) {
    TensorRef s = n.input(kSeqLens);
    if (s.dtype() != MN_I32 && s.dtype() != MN_I64) n.fail("sequence_lens must be int32");
    expect_rank(n, "sequence_lens", s, 1);
    expect_dim(n, "sequence_lens", s, 0, B);
  }
  const char* state_names[] = {"initial_h", "initial_c"};
  for (int i : {kInitH, kInitC}) {
    if (!n.has_input(i)) continue;
    if (i == kInitC && cell != Cell::kLstm) n.fail("has initial_c, which only LSTM takes");
    TensorRef s = n.input(i);
    const char* nm = state_names[i - kInitH];
    expect_rank(n, nm, s, 3);
    expect_dim(n, nm, s, c.layout == 0 ? 0 : 1, D);
    expect_dim(n, nm, s, c.layout == 0 ? 1 : 0, B);
    expect_dim(n, nm, s, 2, H);
  }
  if (cell == Cell::kLstm && n.has_input(kP)) {
    expect_rank(n, "P", n.input(kP), 2);
    expect_dim(n, "P", n.input(kP), 0, D);
    expect_dim(n, "P", n.input(kP), 1, H < 0 ? -1 : 3 * H);
  }

  // Activations: default per cell, listed ones per direction (num_directions x count).
  const size_t per_dir = cell == Cell::kLstm ? 3 : cell == Cell::kGru ? 2 : 1;
  std::vector<std::string> names = n.attr_strings("activations");
  if (names.empty()) {
    std::vector<std::string> def = cell == Cell::kLstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                   : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                        : std::vector<std::string>{"Tanh"};
    for (int64_t d = 0; d < D; ++d) names.insert(names.end(), def.begin(), def.end());
  }
  if (names.size() != per_dir * size_t(D))
    n.fail("activations lists " + std::to_string(names.size()) + " functions; " + dir + " " + n.op() +
           " needs " + std::to_string(per_dir * size_t(D)));
  std::vector<Activation> all;
  try {
    all = resolve_activations(names, n.attr_floats("activation_alpha"), n.attr_floats("activation_beta"));
  } catch (const std::invalid_argument& e) {
    n.fail(e.what());
  }
  for (int64_t d = 0; d < D; ++d)
    c.acts.emplace_back(all.begin() + d * per_dir, all.begin() + (d + 1) * per_dir);
  return c;
}

}  // namespace ops_lstm
}  // namespace minnow
