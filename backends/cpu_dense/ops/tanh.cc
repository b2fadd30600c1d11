// Tanh: hyperbolic tangent.
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

MINNOW_CPU_DENSE_F32_UNARY(tanh, "f32_tanh_ref", std::tanh(x))

}  // namespace cpu_dense
}  // namespace minnow
