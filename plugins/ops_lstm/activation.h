// The activation functions ONNX RNN/LSTM/GRU accept in their `activations` attribute,
// with their alpha/beta parameters resolved once at prepare time.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace minnow {
namespace ops_lstm {

enum class ActKind { kSigmoid, kTanh, kRelu, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh,
                     kHardSigmoid, kElu, kSoftsign, kSoftplus };

struct Activation {
  ActKind kind = ActKind::kSigmoid;
  float alpha = 0.f, beta = 0.f;

  float operator()(float x) const {
    switch (kind) {
      case ActKind::kSigmoid: return 1.f / (1.f + std::exp(-x));
      case ActKind::kTanh: return std::tanh(x);
      case ActKind::kRelu: return x > 0.f ? x : 0.f;
      case ActKind::kAffine: return alpha * x + beta;
      case ActKind::kLeakyRelu: return x >= 0.f ? x : alpha * x;
      case ActKind::kThresholdedRelu: return x > alpha ? x : 0.f;
      case ActKind::kScaledTanh: return alpha * std::tanh(beta * x);
      case ActKind::kHardSigmoid: return std::fmin(std::fmax(alpha * x + beta, 0.f), 1.f);
      case ActKind::kElu: return x >= 0.f ? x : alpha * (std::exp(x) - 1.f);
      case ActKind::kSoftsign: return x / (1.f + std::fabs(x));
      case ActKind::kSoftplus: return x > 20.f ? x : std::log1p(std::exp(x));
    }
    return x;
  }
  // Applies in place to n values.
  void apply(float* v, int64_t n) const {
    switch (kind) {
      case ActKind::kSigmoid:
        for (int64_t i = 0; i < n; ++i) v[i] = 1.f / (1.f + std::exp(-v[i]));
        return;
      case ActKind::kTanh:
        for (int64_t i = 0; i < n; ++i) v[i] = std::tanh(v[i]);
        return;
      default:
        for (int64_t i = 0; i < n; ++i) v[i] = (*this)(v[i]);
    }
  }
};

// Resolves names (case-insensitive, as onnxruntime accepts them) and parameters.
// alpha/beta lists are consumed in order, only by the functions that take that parameter
// (onnxruntime's reading of "consumed in the order of activation functions"); a function
// whose value is not in the list gets the default of the ONNX op of the same name.
// Throws std::invalid_argument naming an unknown function.
std::vector<Activation> resolve_activations(const std::vector<std::string>& names,
                                            const std::vector<float>& alphas,
                                            const std::vector<float>& betas);

}  // namespace ops_lstm
}  // namespace minnow
