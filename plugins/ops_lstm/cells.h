// One time step of one batch row of each ONNX cell, after the gate GEMMs: `xw` is the
// row of X*W^T, `hr` the row of H(t-1)*R^T (for GRU without linear_before_reset the
// h-gate part is (r (.) H(t-1))*Rh^T, computed by the caller between the two halves).
// Gate order as in ONNX: LSTM i,o,f,c; GRU z,r,h.
#pragma once

#include "activation.h"

#include <algorithm>
#include <cstdint>

namespace minnow {
namespace ops_lstm {

inline float clip_to(float v, float clip) { return clip > 0.f ? std::min(std::max(v, -clip), clip) : v; }

struct LstmParams {
  int64_t H;
  const float* bias;  // [4H] = Wb + Rb
  const float* peep;  // [3H] i,o,f or null
  float clip;
  bool input_forget;
  Activation f, g, h;
};

// c: in C(t-1), out C(t); h_out: H(t).
inline void lstm_step(const LstmParams& p, const float* xw, const float* hr, float* c, float* h_out) {
  const int64_t H = p.H;
  for (int64_t j = 0; j < H; ++j) {
    const float cp = c[j];
    float gi = xw[j] + hr[j] + p.bias[j];
    float go = xw[H + j] + hr[H + j] + p.bias[H + j];
    float gf = xw[2 * H + j] + hr[2 * H + j] + p.bias[2 * H + j];
    float gc = xw[3 * H + j] + hr[3 * H + j] + p.bias[3 * H + j];
    if (p.peep) {
      gi += p.peep[j] * cp;
      gf += p.peep[2 * H + j] * cp;
    }
    const float i = p.f(clip_to(gi, p.clip));
    const float f = p.input_forget ? 1.f - i : p.f(clip_to(gf, p.clip));
    const float cc = p.g(clip_to(gc, p.clip));
    const float cn = f * cp + i * cc;
    if (p.peep) go += p.peep[H + j] * cn;
    const float o = p.f(clip_to(go, p.clip));
    c[j] = cn;
    h_out[j] = o * p.h(cn);
  }
}

struct GruParams {
  int64_t H;
  const float* wb;  // [3H] W bias z,r,h
  const float* rb;  // [3H] R bias z,r,h
  float clip;
  bool linear_before_reset;
  Activation f, g;
};

// First half: z and r into zr[0..2H) (activated).
inline void gru_gates(const GruParams& p, const float* xw, const float* hr, float* zr) {
  for (int64_t j = 0; j < 2 * p.H; ++j) zr[j] = p.f(clip_to(xw[j] + hr[j] + p.wb[j] + p.rb[j], p.clip));
}

// Second half: hr_h is the h-gate GEMM row (H(t-1)*Rh^T, or (r.H(t-1))*Rh^T without
// linear_before_reset). h: in H(t-1), written to h_out (may alias h).
inline void gru_finish(const GruParams& p, const float* xw, const float* hr_h, const float* zr,
                       const float* h, float* h_out) {
  const int64_t H = p.H;
  for (int64_t j = 0; j < H; ++j) {
    const float z = zr[j], r = zr[H + j];
    float pre = p.linear_before_reset ? xw[2 * H + j] + p.wb[2 * H + j] + r * (hr_h[j] + p.rb[2 * H + j])
                                      : xw[2 * H + j] + hr_h[j] + p.rb[2 * H + j] + p.wb[2 * H + j];
    const float hh = p.g(clip_to(pre, p.clip));
    h_out[j] = (1.f - z) * hh + z * h[j];
  }
}

struct RnnParams {
  int64_t H;
  const float* bias;  // [H] = Wb + Rb
  float clip;
  Activation f;
};

inline void rnn_step(const RnnParams& p, const float* xw, const float* hr, float* h_out) {
  for (int64_t j = 0; j < p.H; ++j) h_out[j] = p.f(clip_to(xw[j] + hr[j] + p.bias[j], p.clip));
}

}  // namespace ops_lstm
}  // namespace minnow
