// Sqrt: square root (NaN below 0, as std::sqrt).
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

MINNOW_CPU_DENSE_F32_UNARY(sqrt, "f32_sqrt_ref", std::sqrt(x))

}  // namespace cpu_dense
}  // namespace minnow
