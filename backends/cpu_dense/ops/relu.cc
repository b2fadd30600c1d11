// Relu: y = max(x, 0), element-wise, in place allowed.
#include "../ops.h"
#include "../unary.h"

namespace minnow {
namespace cpu_dense {

MINNOW_CPU_DENSE_F32_UNARY(relu, "f32_relu_ref", x > 0.0f ? x : 0.0f)

}  // namespace cpu_dense
}  // namespace minnow
