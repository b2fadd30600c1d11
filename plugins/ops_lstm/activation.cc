#include "activation.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace minnow {
namespace ops_lstm {

std::vector<Activation> resolve_activations(const std::vector<std::string>& names,
                                            const std::vector<float>& alphas,
                                            const std::vector<float>& betas) {
  size_t ai = 0, bi = 0;
  auto alpha = [&](float def) { return ai < alphas.size() ? alphas[ai++] : def; };
  auto beta = [&](float def) { return bi < betas.size() ? betas[bi++] : def; };
  std::vector<Activation> out;
  for (const std::string& name : names) {
    std::string l(name);
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    Activation a;
    if (l == "sigmoid") a.kind = ActKind::kSigmoid;
    else if (l == "tanh") a.kind = ActKind::kTanh;
    else if (l == "relu") a.kind = ActKind::kRelu;
    else if (l == "affine") { a.kind = ActKind::kAffine; a.alpha = alpha(1.f); a.beta = beta(0.f); }
    else if (l == "leakyrelu") { a.kind = ActKind::kLeakyRelu; a.alpha = alpha(0.01f); }
    else if (l == "thresholdedrelu") { a.kind = ActKind::kThresholdedRelu; a.alpha = alpha(1.f); }
    else if (l == "scaledtanh") { a.kind = ActKind::kScaledTanh; a.alpha = alpha(1.f); a.beta = beta(1.f); }
    else if (l == "hardsigmoid") { a.kind = ActKind::kHardSigmoid; a.alpha = alpha(0.2f); a.beta = beta(0.5f); }
    else if (l == "elu") { a.kind = ActKind::kElu; a.alpha = alpha(1.f); }
    else if (l == "softsign") a.kind = ActKind::kSoftsign;
    else if (l == "softplus") a.kind = ActKind::kSoftplus;
    else throw std::invalid_argument("unknown activation function '" + name + "'");
    out.push_back(a);
  }
  return out;
}

}  // namespace ops_lstm
}  // namespace minnow
