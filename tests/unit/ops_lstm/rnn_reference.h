// Naive reference of ONNX RNN / LSTM / GRU, written from the ONNX operator definitions
// (double precision, one loop per equation), independent of the plugin's code.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ref {

struct Act {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(0.0, x);
    if (name == "Affine") return alpha * x + beta;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0.0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::min(1.0, std::max(0.0, alpha * x + beta));
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::fabs(x));
    if (name == "Softplus") return std::log(1 + std::exp(x));
    throw std::runtime_error("reference: unknown activation " + name);
  }
};

struct Problem {
  std::string op;  // RNN, LSTM, GRU
  int64_t seq = 1, batch = 1, input = 1, hidden = 1;
  int dirs = 1;
  bool reverse = false;
  int layout = 0;
  double clip = 0;
  bool input_forget = false, linear_before_reset = false;
  std::vector<Act> acts;  // dirs * per-direction count
  // Data in ONNX layouts (X, h0, c0 following `layout`).
  std::vector<float> X, W, R, B, P, h0, c0;
  std::vector<int32_t> lens;  // empty: all seq
};

struct Result {
  std::vector<float> Y, Yh, Yc;
};

inline int gates_of(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

inline Result run(const Problem& p) {
  const int64_t S = p.seq, N = p.batch, I = p.input, H = p.hidden, D = p.dirs, G = gates_of(p.op);
  auto xat = [&](int64_t t, int64_t b, int64_t i) {
    return double(p.layout ? p.X[(b * S + t) * I + i] : p.X[(t * N + b) * I + i]);
  };
  auto st_at = [&](int64_t d, int64_t b) { return p.layout ? (b * D + d) * H : (d * N + b) * H; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return p.layout ? ((b * S + t) * D + d) * H : ((t * D + d) * N + b) * H;
  };
  auto cl = [&](double v) { return p.clip > 0 ? std::min(p.clip, std::max(-p.clip, v)) : v; };
  Result r;
  r.Y.assign(size_t(S * D * N * H), 0.f);
  r.Yh.assign(size_t(D * N * H), 0.f);
  r.Yc.assign(size_t(D * N * H), 0.f);
  const int per = p.op == "LSTM" ? 3 : p.op == "GRU" ? 2 : 1;
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = d == 1 || p.reverse;
    const float* W = p.W.data() + d * G * H * I;
    const float* R = p.R.data() + d * G * H * H;
    const float* Wb = p.B.empty() ? nullptr : p.B.data() + d * 2 * G * H;
    const float* Rb = Wb ? Wb + G * H : nullptr;
    const float* P = p.P.empty() ? nullptr : p.P.data() + d * 3 * H;
    const Act& f = p.acts[size_t(d * per)];
    const Act& g = p.acts[size_t(d * per + (per > 1 ? 1 : 0))];
    const Act& hh = p.acts[size_t(d * per + (per > 2 ? 2 : 0))];
    for (int64_t b = 0; b < N; ++b) {
      const int64_t len = p.lens.empty() ? S : p.lens[size_t(b)];
      std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        h[size_t(j)] = p.h0.empty() ? 0 : p.h0[size_t(st_at(d, b) + j)];
        c[size_t(j)] = p.c0.empty() ? 0 : p.c0[size_t(st_at(d, b) + j)];
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = rev ? len - 1 - s : s;
        // xw[g*H+j] = X_t . W row, hr[...] = H_{t-1} . R row
        std::vector<double> xw(size_t(G * H)), hr(size_t(G * H));
        for (int64_t row = 0; row < G * H; ++row) {
          double a = 0, bsum = 0;
          for (int64_t i = 0; i < I; ++i) a += xat(t, b, i) * W[row * I + i];
          for (int64_t k = 0; k < H; ++k) bsum += h[size_t(k)] * R[row * H + k];
          xw[size_t(row)] = a + (Wb ? Wb[row] : 0);
          hr[size_t(row)] = bsum + (Rb ? Rb[row] : 0);
        }
        std::vector<double> hn(static_cast<size_t>(H));
        if (p.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) hn[size_t(j)] = f(cl(xw[size_t(j)] + hr[size_t(j)]));
        } else if (p.op == "LSTM") {
          for (int64_t j = 0; j < H; ++j) {
            const size_t J = size_t(j);
            double i_ = xw[J] + hr[J] + (P ? P[j] * c[J] : 0);
            double f_ = xw[2 * H + J] + hr[2 * H + J] + (P ? P[2 * H + j] * c[J] : 0);
            double c_ = xw[3 * H + J] + hr[3 * H + J];
            double it = f(cl(i_));
            double ft = p.input_forget ? 1 - it : f(cl(f_));
            double ct = g(cl(c_));
            double C = ft * c[J] + it * ct;
            double o_ = xw[H + J] + hr[H + J] + (P ? P[H + j] * C : 0);
            double ot = f(cl(o_));
            c[J] = C;
            hn[J] = ot * hh(C);
          }
        } else {  // GRU
          std::vector<double> z(static_cast<size_t>(H)), rr(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = f(cl(xw[size_t(j)] + hr[size_t(j)]));
            rr[size_t(j)] = f(cl(xw[size_t(H + j)] + hr[size_t(H + j)]));
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre;
            if (p.linear_before_reset) {
              pre = xw[size_t(2 * H + j)] + rr[size_t(j)] * hr[size_t(2 * H + j)];
            } else {
              double acc = Rb ? Rb[2 * H + j] : 0;
              for (int64_t k = 0; k < H; ++k) acc += rr[size_t(k)] * h[size_t(k)] * R[(2 * H + j) * H + k];
              pre = xw[size_t(2 * H + j)] + acc;
            }
            double ht = g(cl(pre));
            hn[size_t(j)] = (1 - z[size_t(j)]) * ht + z[size_t(j)] * h[size_t(j)];
          }
        }
        h = hn;
        for (int64_t j = 0; j < H; ++j) r.Y[size_t(y_at(t, d, b) + j)] = float(h[size_t(j)]);
      }
      for (int64_t j = 0; j < H; ++j) {
        r.Yh[size_t(st_at(d, b) + j)] = float(h[size_t(j)]);
        r.Yc[size_t(st_at(d, b) + j)] = float(c[size_t(j)]);
      }
    }
  }
  return r;
}

}  // namespace ref
