// Caffe's LSTM layer as the op caffe::LSTM (version 1), for the Caffe frontend.
//
// Contract (what the Caffe frontend must emit):
//   inputs   0 x     float32 [T, N, I]   time-major, as Caffe's bottom[0]
//            1 cont  float32 [T, N]      sequence continuation (bottom[1]): 0 starts a new
//                                        sequence at that step (h, c reset), 1 continues.
//                                        Optional (""): then cont = 0 at t = 0, else 1.
//            2 W_xc  float32 [4H, I]     Caffe blob 0 (x -> gates)
//            3 b_c   float32 [4H]        Caffe blob 1 (gate bias)
//            4 W_hc  float32 [4H, H]     Caffe blob 2 (h -> gates)
//            5 h0    float32 [1, N, H]   optional initial hidden state (expose_hidden)
//            6 c0    float32 [1, N, H]   optional initial cell state (expose_hidden)
//   outputs  0 h     float32 [T, N, H]
//            1 h_T   float32 [1, N, H]   optional (expose_hidden)
//            2 c_T   float32 [1, N, H]   optional (expose_hidden)
//   attributes: num_output (int, optional; must equal H when given).
//   Gate order in W_xc / b_c / W_hc rows: i, f, o, g (Caffe), not ONNX's i, o, f, c.
//   Per step t, with h' = cont_t * h_{t-1}:
//     [i f o g] = W_xc x_t + b_c + W_hc h'
//     i, f, o = sigmoid(.), g = tanh(.)
//     c_t = cont_t * f * c_{t-1} + i * g,   h_t = o * tanh(c_t)
//   The static input x_static (Caffe bottom[2]) is not supported: the frontend adds its
//   projection to x beforehand or refuses the model.
#include "kernels.h"
#include "weight_gemm.h"

#include <cmath>
#include <cstring>

namespace minnow {
namespace ops_lstm {

using plugin::Node;
using plugin::PluginError;
using plugin::RunContext;
using plugin::TensorRef;

namespace {

enum { kCx = 0, kCont = 1, kWxc = 2, kBc = 3, kWhc = 4, kH0 = 5, kC0 = 6 };

inline float sigm(float v) { return 1.f / (1.f + std::exp(-v)); }

class CaffeLstmKernel : public plugin::Kernel {
 public:
  CaffeLstmKernel(const Node& n, const mn_host_api* host) {
    check_caffe_lstm(n);
    H_ = n.input(kWhc).dim(1);
    I_ = n.input(kWxc).dim(1);
    for (int i : {kWxc, kBc, kWhc})
      if (!n.input(i).is_constant()) n.fail("weights (inputs 2..4) must be constants");
    const std::string who = "node '" + n.name() + "' (caffe::LSTM)";
    w_ = WeightGemm(host, n.input(kWxc).data<float>(), 4 * H_, I_, who + " W_xc");
    r_ = WeightGemm(host, n.input(kWhc).data<float>(), 4 * H_, H_, who + " W_hc");
    bias_.assign(n.input(kBc).data<float>(), n.input(kBc).data<float>() + 4 * H_);
  }
  const char* name() const override { return "f32_caffe_lstm_service_gemm"; }
  size_t scratch_bytes(const mn_tensor* in, int, const mn_tensor*, int) const override {
    const int64_t T = in[kCx].dims[0], N = in[kCx].dims[1];
    return size_t(T * N * 4 * H_ + N * 4 * H_ + 3 * N * H_) * sizeof(float);
  }
  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 2.0 * in[kCx].dims[0] * in[kCx].dims[1] * 4 * H_ * double(I_ + H_);
  }

  void run(const RunContext& ctx, const mn_tensor* in, int ni, mn_tensor* out, int no) const override {
    const int64_t T = in[kCx].dims[0], N = in[kCx].dims[1], H = H_, G = 4 * H_;
    auto opt = [&](int i) { return i < ni && in[i].dtype != MN_UNDEFINED ? static_cast<const float*>(in[i].data) : nullptr; };
    const float* cont = opt(kCont);
    const float* h0 = opt(kH0);
    const float* c0 = opt(kC0);
    float* xw = static_cast<float*>(ctx.scratch());
    float* step = xw + T * N * G;
    float* h = step + N * G;
    float* c = h + N * H;
    float* hc = c + N * H;  // cont_t * h_{t-1}
    for (int64_t j = 0; j < N * H; ++j) {
      h[j] = h0 ? h0[j] : 0.f;
      c[j] = c0 ? c0[j] : 0.f;
    }
    float* Y = static_cast<float*>(out[0].data);
    if (T * N > 0) w_.multiply(ctx.raw(), T * N, static_cast<const float*>(in[kCx].data), I_, 0.f, xw, G);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t b = 0; b < N; ++b) {
        const float k = cont ? cont[t * N + b] : (t == 0 ? 0.f : 1.f);
        for (int64_t j = 0; j < H; ++j) hc[b * H + j] = k * h[b * H + j];
      }
      r_.multiply(ctx.raw(), N, hc, H, 0.f, step, G);
      for (int64_t b = 0; b < N; ++b) {
        const float k = cont ? cont[t * N + b] : (t == 0 ? 0.f : 1.f);
        const float* x = xw + (t * N + b) * G;
        const float* s = step + b * G;
        for (int64_t j = 0; j < H; ++j) {
          const float i = sigm(x[j] + s[j] + bias_[j]);
          const float f = sigm(x[H + j] + s[H + j] + bias_[H + j]);
          const float o = sigm(x[2 * H + j] + s[2 * H + j] + bias_[2 * H + j]);
          const float g = std::tanh(x[3 * H + j] + s[3 * H + j] + bias_[3 * H + j]);
          const float cn = k * f * c[b * H + j] + i * g;
          c[b * H + j] = cn;
          h[b * H + j] = o * std::tanh(cn);
        }
        std::memcpy(Y + (t * N + b) * H, h + b * H, size_t(H) * sizeof(float));
      }
    }
    if (no > 1 && out[1].data) std::memcpy(out[1].data, h, size_t(N * H) * sizeof(float));
    if (no > 2 && out[2].data) std::memcpy(out[2].data, c, size_t(N * H) * sizeof(float));
  }

 private:
  int64_t H_ = 0, I_ = 0;
  WeightGemm w_, r_;
  std::vector<float> bias_;
};

}  // namespace

void check_caffe_lstm(const Node& n) {
  if (n.num_inputs() < 5 || !n.has_input(kCx) || !n.has_input(kWxc) || !n.has_input(kBc) || !n.has_input(kWhc))
    n.fail("needs inputs x, cont (may be omitted), W_xc, b_c, W_hc");
  if (n.num_inputs() > 7) n.fail("x_static (a static input) is not supported");
  for (int i = 0; i < n.num_inputs(); ++i)
    if (n.has_input(i) && n.input(i).dtype() != MN_F32) n.fail("input " + std::to_string(i) + " must be float32");
  TensorRef x = n.input(kCx), w = n.input(kWxc), b = n.input(kBc), r = n.input(kWhc);
  if (x.rank() != 3) n.fail("x must be [T, N, I]");
  if (w.rank() != 2 || r.rank() != 2 || b.rank() != 1) n.fail("W_xc, W_hc must be matrices and b_c a vector");
  const int64_t H = r.dim(1);
  if (H <= 0 || r.dim(0) != 4 * H || w.dim(0) != 4 * H || b.dim(0) != 4 * H)
    n.fail("W_xc [4H, I], b_c [4H], W_hc [4H, H] disagree on H");
  if (x.dim(2) >= 0 && w.dim(1) != x.dim(2)) n.fail("W_xc has " + std::to_string(w.dim(1)) + " columns but x has " + std::to_string(x.dim(2)) + " features");
  if (n.has_attr("num_output") && n.attr_int("num_output", 0) != H)
    n.fail("num_output " + std::to_string(n.attr_int("num_output", 0)) + " differs from the weights' H = " + std::to_string(H));
  if (n.has_input(kCont)) {
    TensorRef cn = n.input(kCont);
    if (cn.rank() != 2 || (cn.dim(0) >= 0 && x.dim(0) >= 0 && cn.dim(0) != x.dim(0)) ||
        (cn.dim(1) >= 0 && x.dim(1) >= 0 && cn.dim(1) != x.dim(1)))
      n.fail("cont must be [T, N] like x's first two dims");
  }
  for (int i : {kH0, kC0})
    if (n.num_inputs() > i && n.has_input(i)) {
      TensorRef s = n.input(i);
      if (s.rank() != 3 || s.dim(0) != 1 || s.dim(2) != H || (s.dim(1) >= 0 && x.dim(1) >= 0 && s.dim(1) != x.dim(1)))
        n.fail(std::string(i == kH0 ? "h0" : "c0") + " must be [1, N, H]");
    }
}

std::unique_ptr<plugin::Kernel> make_caffe_lstm(const Node& n, const mn_host_api* host) {
  return std::make_unique<CaffeLstmKernel>(n, host);
}

}  // namespace ops_lstm
}  // namespace minnow
