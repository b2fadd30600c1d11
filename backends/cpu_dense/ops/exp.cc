// Exp: e^x.
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

MINNOW_CPU_DENSE_F32_UNARY(exp, "f32_exp_ref", std::exp(x))

}  // namespace cpu_dense
}  // namespace minnow
