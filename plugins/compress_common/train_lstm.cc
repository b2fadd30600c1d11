// LSTM in the training graph: forward over the sequence keeping every step's gates, and
// backpropagation through time. ONNX LSTM, the form the frontends produce for PyTorch's
// nn.LSTM: one direction (forward), layout 0 (X [T, N, I], Y [T, 1, N, H]), gates in ONNX
// order i, o, f, c with the default activations (sigmoid, tanh, tanh), no peepholes, no
// clip, no sequence_lens, initial states constant (their batch dim may be 1: broadcast).
// W [1, 4H, I], R [1, 4H, H] and B [1, 8H] (Wb then Rb) are the trainable parameters.
#include "train_graph.h"
#include "train_math.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace minnow {
namespace compress {

namespace {

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

int64_t hidden_of(const ir::Node& n) {
  const ir::Attribute* a = n.attr("hidden_size");
  return a ? a->i : -1;
}

// An initial state ([1, N or 1, H] constant, or zeros when `v` is null) as N x H.
std::vector<float> initial_state(const ir::Node& n, const Value* v, int64_t N, int64_t H) {
  std::vector<float> s(size_t(N * H), 0.f);
  if (!v) return s;
  if (int64_t(v->data.size()) == H)
    for (int64_t b = 0; b < N; ++b) std::copy(v->data.begin(), v->data.end(), s.begin() + b * H);
  else if (int64_t(v->data.size()) == N * H)
    s = v->data;
  else
    throw std::runtime_error(n.describe() + ": initial state does not match [1, N, H]");
  return s;
}

}  // namespace

std::string lstm_untrainable(const ir::ModelIR& m, const ir::Node& n) {
  const auto& g = m.graph;
  auto is_const = [&](size_t k) { return k < n.inputs.size() && n.inputs[k] >= 0 && g.tensors[size_t(n.inputs[k])].is_constant(); };
  auto given = [&](size_t k) { return k < n.inputs.size() && n.inputs[k] >= 0; };
  if (hidden_of(n) <= 0) return "hidden_size missing";
  if (const ir::Attribute* d = n.attr("direction"); d && d->s != "forward") return "direction " + d->s;
  if (const ir::Attribute* l = n.attr("layout"); l && l->i != 0) return "layout 1";
  if (n.attr("clip")) return "clip";
  if (const ir::Attribute* f = n.attr("input_forget"); f && f->i != 0) return "input_forget";
  if (const ir::Attribute* a = n.attr("activations")) {
    const std::vector<std::string> def{"Sigmoid", "Tanh", "Tanh"};
    if (a->strings != def) return "activations other than Sigmoid, Tanh, Tanh";
  }
  if (!is_const(1) || !is_const(2)) return "W and R must be constants";
  if (given(3) && !is_const(3)) return "B must be a constant";
  if (given(4)) return "sequence_lens";
  if ((given(5) && !is_const(5)) || (given(6) && !is_const(6))) return "initial_h / initial_c must be constants";
  if (given(7)) return "peepholes (P)";
  for (size_t o = 1; o < n.outputs.size(); ++o) {  // only Y is produced here
    const int t = n.outputs[o];
    if (t < 0) continue;
    for (const auto& other : g.nodes)
      for (int i : other.inputs)
        if (i == t) return "Y_h / Y_c are used";
    for (int out : g.outputs)
      if (out == t) return "Y_h / Y_c are graph outputs";
  }
  return "";
}

// Saved per step t (N x H each): i, o, f, c~ (gate values), C_t, tanh(C_t); H_t is Y.
void TrainGraph::forward_lstm(const ir::Node& n) {
  const Value& X = val(n.inputs[0]);
  const Value &W = val(n.inputs[1]), &R = val(n.inputs[2]);
  const int64_t H = hidden_of(n);
  if (X.shape.size() != 3) throw std::runtime_error(n.describe() + ": X must be [T, N, I]");
  const int64_t T = X.shape[0], N = X.shape[1], I = X.shape[2], G = 4 * H;
  if (int64_t(W.data.size()) != G * I || int64_t(R.data.size()) != G * H)
    throw std::runtime_error(n.describe() + ": W / R do not match hidden_size and the input");
  std::vector<float> bias(size_t(G), 0.f);
  if (n.inputs.size() > 3 && n.inputs[3] >= 0) {
    const Value& B = val(n.inputs[3]);
    if (int64_t(B.data.size()) != 2 * G) throw std::runtime_error(n.describe() + ": B must be [1, 8H]");
    for (int64_t k = 0; k < G; ++k) bias[size_t(k)] = B.data[size_t(k)] + B.data[size_t(G + k)];
  }
  auto given = [&](size_t k) { return k < n.inputs.size() && n.inputs[k] >= 0 ? &val(n.inputs[k]) : nullptr; };
  std::vector<float> h = initial_state(n, given(5), N, H), c = initial_state(n, given(6), N, H);
  const std::vector<float> Wt = transpose(W.data.data(), G, I), Rt = transpose(R.data.data(), G, H);
  std::vector<float>& saved = saved_[n.outputs[0]];
  saved.assign(size_t(T * 6 * N * H), 0.f);
  Value y;
  y.shape = {T, 1, N, H};
  y.data.assign(size_t(T * N * H), 0.f);
  std::vector<float> gates(size_t(N * G));
  for (int64_t t = 0; t < T; ++t) {
    matmul(X.data.data() + t * N * I, Wt.data(), gates.data(), N, I, G, false);
    matmul(h.data(), Rt.data(), gates.data(), N, H, G, true);
    float* sv = saved.data() + t * 6 * N * H;  // i o f c~ C tanhC
    float* ht = y.data.data() + t * N * H;
    // The gates, element by element: rows of the batch in parallel (each element on its
    // own, so the result does not depend on the split); the sigmoids and tanhs cost more
    // than the two products above, which are parallel already.
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N, 8), [&](const tbb::blocked_range<int64_t>& rows) {
      for (int64_t b = rows.begin(); b < rows.end(); ++b)
        for (int64_t j = 0; j < H; ++j) {
          const float* gr = gates.data() + b * G;
          const float i = sigmoid(gr[j] + bias[size_t(j)]), o = sigmoid(gr[H + j] + bias[size_t(H + j)]),
                      f = sigmoid(gr[2 * H + j] + bias[size_t(2 * H + j)]),
                      cc = std::tanh(gr[3 * H + j] + bias[size_t(3 * H + j)]);
          const int64_t e = b * H + j;
          const float cn = f * c[size_t(e)] + i * cc, tc = std::tanh(cn);
          sv[e] = i;
          sv[N * H + e] = o;
          sv[2 * N * H + e] = f;
          sv[3 * N * H + e] = cc;
          sv[4 * N * H + e] = cn;
          sv[5 * N * H + e] = tc;
          c[size_t(e)] = cn;
          h[size_t(e)] = ht[e] = o * tc;
        }
    });
  }
  acts_[n.outputs[0]] = std::move(y);
}

void TrainGraph::backward_lstm(const ir::Node& n) {
  const Value& X = val(n.inputs[0]);
  const Value &W = val(n.inputs[1]), &R = val(n.inputs[2]);
  const int64_t H = hidden_of(n), T = X.shape[0], N = X.shape[1], I = X.shape[2], G = 4 * H;
  const std::vector<float> dY = grads_.at(n.outputs[0]).data;  // copy: grads_ may rehash
  const std::vector<float>& saved = saved_.at(n.outputs[0]);
  const Value& Y = acts_.at(n.outputs[0]);
  auto wants = [&](size_t k) {
    if (k >= n.inputs.size() || n.inputs[k] < 0) return false;
    const int t = n.inputs[k];
    if (consts_.count(t)) return std::find(params_.begin(), params_.end(), t) != params_.end();
    return t != input_;
  };
  const bool wx = wants(0), ww = wants(1), wr = wants(2), wb = wants(3);
  float* dX = wx ? grad(n.inputs[0], X.shape).data.data() : nullptr;
  float* dW = ww ? grad(n.inputs[1], W.shape).data.data() : nullptr;
  float* dR = wr ? grad(n.inputs[2], R.shape).data.data() : nullptr;
  float* dB = wb ? grad(n.inputs[3], val(n.inputs[3]).shape).data.data() : nullptr;
  // h_{t-1} and c_{t-1} of step 0: the initial states, as the forward pass read them.
  auto given = [&](size_t k) { return k < n.inputs.size() && n.inputs[k] >= 0 ? &val(n.inputs[k]) : nullptr; };
  const std::vector<float> h0 = initial_state(n, given(5), N, H), c0 = initial_state(n, given(6), N, H);
  std::vector<float> dh_next(size_t(N * H), 0.f), dc_next(size_t(N * H), 0.f), dG(size_t(N * G));
  for (int64_t t = T - 1; t >= 0; --t) {
    const float* sv = saved.data() + t * 6 * N * H;
    const float* c_prev = t > 0 ? saved.data() + (t - 1) * 6 * N * H + 4 * N * H : c0.data();
    const float* h_prev = t > 0 ? Y.data.data() + (t - 1) * N * H : h0.data();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, N, 8), [&](const tbb::blocked_range<int64_t>& rows) {
      for (int64_t b = rows.begin(); b < rows.end(); ++b)
        for (int64_t j = 0; j < H; ++j) {
          const int64_t e = b * H + j;
          const float i = sv[e], o = sv[N * H + e], f = sv[2 * N * H + e], cc = sv[3 * N * H + e],
                      tc = sv[5 * N * H + e];
          const float dh = dY[size_t(t * N * H + e)] + dh_next[size_t(e)];
          const float dc = dc_next[size_t(e)] + dh * o * (1 - tc * tc);
          float* dg = dG.data() + b * G;
          dg[j] = dc * cc * i * (1 - i);
          dg[H + j] = dh * tc * o * (1 - o);
          dg[2 * H + j] = dc * c_prev[e] * f * (1 - f);
          dg[3 * H + j] = dc * i * (1 - cc * cc);
          dc_next[size_t(e)] = dc * f;
        }
    });
    // Parameters: dW += dG^T X_t, dR += dG^T h_{t-1}, dWb = dRb += sum over the batch.
    if (ww || wr) {
      const std::vector<float> dGt = transpose(dG.data(), N, G);
      if (ww) matmul(dGt.data(), X.data.data() + t * N * I, dW, G, N, I, true);
      if (wr) matmul(dGt.data(), h_prev, dR, G, N, H, true);
    }
    if (wb)
      for (int64_t b = 0; b < N; ++b)
        for (int64_t k = 0; k < G; ++k) {
          dB[k] += dG[size_t(b * G + k)];
          dB[G + k] += dG[size_t(b * G + k)];
        }
    if (wx) matmul(dG.data(), W.data.data(), dX + t * N * I, N, G, I, true);
    matmul(dG.data(), R.data.data(), dh_next.data(), N, G, H, false);
  }
}

}  // namespace compress
}  // namespace minnow
