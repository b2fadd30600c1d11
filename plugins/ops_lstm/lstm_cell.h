// The LSTM cell vectorised (Highway, dynamic dispatch) for ONNX's default activations
// (f = sigmoid, g = h = tanh): per time step and batch row the same arithmetic as
// lstm_step (cells.h, the reference), with Highway's Exp / Tanh (<= 4 ulp) instead of
// libm's, a few times faster. The default activations are what every exported LSTM uses.
#pragma once

#include "cells.h"

namespace minnow {
namespace ops_lstm {

// Does lstm_step_simd compute this cell (sigmoid, tanh, tanh)?
bool lstm_simd_applies(const LstmParams& p);
// As lstm_step: c holds C(t-1) in, C(t) out; h_out gets H(t).
void lstm_step_simd(const LstmParams& p, const float* xw, const float* hr, float* c, float* h_out);
// The SIMD target chosen at run time ("AVX3", "AVX2", "NEON" ...).
const char* lstm_simd_target();

}  // namespace ops_lstm
}  // namespace minnow
