// MaxPool (1-3 spatial dims): pads, strides, dilations, auto_pad, ceil_mode; float32,
// int8 and uint8 (opset 12); the optional Indices output (opset 8) in row-major or, with
// storage_order=1, column-major order.
//
// float32 without Indices runs the shared PoolKernel (pool.h). The rest runs
// MaxPoolIndexKernel<T>: the same window walk, also recording where the maximum was.
// Indices are flat over the whole input, padding not counted, as ONNX defines them:
// (n*C + c) * spatial_size + the position inside the (row- or column-major) spatial block.
// Ties keep the first maximum in row-major scan order, as onnxruntime does.
#include "../ops.h"
#include "../pool.h"

namespace minnow {
namespace cpu_dense {

namespace {

const char* indexed_name(int32_t dtype, int nsp) {
  static const char* const names[3][3] = {
      {"f32_maxpool1d_idx_ref", "f32_maxpool2d_idx_ref", "f32_maxpool3d_idx_ref"},
      {"s8_maxpool1d_ref", "s8_maxpool2d_ref", "s8_maxpool3d_ref"},
      {"u8_maxpool1d_ref", "u8_maxpool2d_ref", "u8_maxpool3d_ref"}};
  const int t = dtype == MN_F32 ? 0 : dtype == MN_I8 ? 1 : 2;
  return names[t][nsp - 1];
}

template <class T>
class MaxPoolIndexKernel final : public OpKernel {
 public:
  MaxPoolIndexKernel(const Node& node, const SpatialAttrs& attrs, int32_t dtype,
                     bool column_major)
      : OpKernel(node, indexed_name(dtype, attrs.nsp)),
        attrs_(attrs),
        dtype_(dtype),
        column_major_(column_major) {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return pool_flops(attrs_, out[0]);
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    Axis ax[kMaxSpatial];
    const Dims od = pool_geometry(*this, attrs_, dtype_, in, num_inputs, out, num_outputs, ax);
    int64_t* idx = nullptr;
    if (num_outputs > 1 && present(out[1])) {
      check_output(out, num_outputs, 1, MN_I64, od);
      idx = static_cast<int64_t*>(out[1].data);
    }

    const T* x = static_cast<const T*>(in[0].data);
    T* y = static_cast<T*>(out[0].data);
    const Axis D = ax[0], H = ax[1], W = ax[2];
    const int64_t plane = D.in * H.in * W.in;
    const int64_t rows = od[0] * od[1] * D.out * H.out;
    const int64_t taps = D.k * H.k * W.k;
    const bool col = column_major_;
    auto body = [&](size_t r0, size_t r1) {
      for (int64_t r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
        const int64_t oh = r % H.out;
        const int64_t od_ = (r / H.out) % D.out;
        const int64_t nc = r / (H.out * D.out);  // n * C + c
        const T* xc = x + nc * plane;
        const int64_t d_start = od_ * D.s - D.pb, h_start = oh * H.s - H.pb;
        int64_t kd0, kd1, kh0, kh1;
        valid_taps(d_start, D.d, D.k, D.in, &kd0, &kd1);
        valid_taps(h_start, H.d, H.k, H.in, &kh0, &kh1);
        for (int64_t ow = 0; ow < W.out; ++ow) {
          const int64_t w_start = ow * W.s - W.pb;
          int64_t kw0, kw1;
          valid_taps(w_start, W.d, W.k, W.in, &kw0, &kw1);
          // A window wholly in the padding has no element: the lowest value, index -1.
          T m = lowest();
          int64_t at = -1;
          for (int64_t kd = kd0; kd < kd1; ++kd) {
            const int64_t id = d_start + kd * D.d;
            for (int64_t kh = kh0; kh < kh1; ++kh) {
              const int64_t ih = h_start + kh * H.d;
              const T* xrow = xc + (id * H.in + ih) * W.in;
              for (int64_t kw = kw0; kw < kw1; ++kw) {
                const int64_t iw = w_start + kw * W.d;
                const T v = xrow[iw];
                if (at < 0 || v > m || is_nan(v)) {  // NaN propagates, as in max()
                  m = v;
                  at = col ? (iw * H.in + ih) * D.in + id : (id * H.in + ih) * W.in + iw;
                }
              }
            }
          }
          y[r * W.out + ow] = m;
          if (idx) idx[r * W.out + ow] = at < 0 ? -1 : nc * plane + at;
        }
      }
    };
    ctx.parallel_for(static_cast<size_t>(rows), grain_for(static_cast<double>(W.out * taps)),
                     std::move(body));
  }

 private:
  static T lowest() {
    if constexpr (std::is_floating_point<T>::value)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }

  SpatialAttrs attrs_;
  int32_t dtype_;
  bool column_major_;
};

bool wants_indices(const Node& node) {
  return node.num_outputs() > 1 && present(*node.output(1).t);
}

}  // namespace

double maxpool_bid(const Node& node) {
  SpatialAttrs a = check_pool(node, true, {MN_F32, MN_I8, MN_U8});
  const int64_t so = node.attr_int("storage_order", 0);
  if (so != 0 && so != 1) node.fail("storage_order must be 0 or 1, got " + std::to_string(so));
  if (wants_indices(node) && node.output(1).dtype() != MN_I64)
    node.fail("the Indices output must be int64");
  double taps = 1;
  for (int i = 0; i < a.nsp; ++i) taps *= static_cast<double>(a.kernel[i]);
  return numel_estimate(*node.output(0).t) * taps;
}

std::unique_ptr<Kernel> maxpool_make(const Node& node) {
  maxpool_bid(node);
  SpatialAttrs a = check_pool(node, true, {MN_F32, MN_I8, MN_U8});
  const int32_t dt = node.input(0).dtype();
  const bool col = node.attr_int("storage_order", 0) == 1;
  if (dt == MN_F32 && !wants_indices(node))
    return std::make_unique<PoolKernel>(node, pool_name(PoolKind::kMax, a.nsp), a,
                                        PoolKind::kMax, false);
  if (dt == MN_F32) return std::make_unique<MaxPoolIndexKernel<float>>(node, a, dt, col);
  if (dt == MN_I8) return std::make_unique<MaxPoolIndexKernel<int8_t>>(node, a, dt, col);
  return std::make_unique<MaxPoolIndexKernel<uint8_t>>(node, a, dt, col);
}

}  // namespace cpu_dense
}  // namespace minnow
