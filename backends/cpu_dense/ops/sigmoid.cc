// Sigmoid: 1 / (1 + exp(-x)), evaluated so exp never overflows (exp of a
// non-positive number only).
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

namespace {
inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}
}  // namespace

MINNOW_CPU_DENSE_F32_UNARY(sigmoid, "f32_sigmoid_ref", sigmoid(x))

}  // namespace cpu_dense
}  // namespace minnow
