// Log: natural logarithm (NaN below 0, -inf at 0, as std::log).
#include <cmath>

#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

MINNOW_CPU_DENSE_F32_UNARY(log, "f32_log_ref", std::log(x))

}  // namespace cpu_dense
}  // namespace minnow
