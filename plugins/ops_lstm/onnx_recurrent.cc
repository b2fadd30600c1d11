// Kernel for ONNX RNN, LSTM and GRU (every attribute of opset 1..22).
//
// Per direction: one GEMM X*W^T over all time steps and batch rows at once (the big,
// parallel one), then per time step one GEMM H(t-1)*R^T over the batch rows (two for GRU
// without linear_before_reset, whose h gate needs r first) and the element-wise cell update,
// parallel over batch rows. All GEMMs go through the host's matmul service (weight_gemm.h);
// the LSTM cell with the default activations is vectorised (lstm_cell.h).
//
// Weights given as constants are packed once at prepare time, and then a run allocates
// nothing (every temporary, the sequence lengths included, lives in the scratch memory the
// host hands in). Weights that are graph inputs (as in the ONNX node tests) are packed on
// each run.
//
// sequence_lens: batch row b runs len_b steps (forward: t = 0..len_b-1; reverse:
// t = len_b-1..0); Y is zero at t >= len_b, Y_h / Y_c hold the state after the last
// valid step (the initial state when len_b = 0), as onnxruntime does.
#include "cells.h"
#include "kernels.h"
#include "lstm_cell.h"
#include "rnn_config.h"
#include "weight_gemm.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace minnow {
namespace ops_lstm {

using plugin::Node;
using plugin::PluginError;
using plugin::RunContext;
using plugin::TensorRef;

namespace {

struct DirWeights {
  WeightGemm w;       // [G*H, I]
  WeightGemm r;       // [G*H, H] (GRU without linear_before_reset: r/z rows only, [2H, H])
  WeightGemm r_h;     // GRU without linear_before_reset: h rows, [H, H]
  std::vector<float> bias;  // LSTM/RNN: Wb + Rb [G*H]; GRU: Wb [3H] then Rb [3H]
  std::vector<float> peep;  // LSTM [3H] or empty
};

std::vector<DirWeights> pack(const RnnConfig& c, const mn_host_api* host, const std::string& who,
                             const float* w, const float* r, const float* b, const float* p) {
  const int64_t H = c.hidden, I = c.input, G = c.gates;
  std::vector<DirWeights> dirs(size_t(c.num_directions));
  for (int d = 0; d < c.num_directions; ++d) {
    DirWeights& dw = dirs[size_t(d)];
    const std::string tag = who + (c.num_directions > 1 ? (d ? " (backward)" : " (forward)") : "");
    dw.w = WeightGemm(host, w + int64_t(d) * G * H * I, G * H, I, tag + " W");
    const float* rd = r + int64_t(d) * G * H * H;
    if (c.cell == Cell::kGru && !c.linear_before_reset) {
      dw.r = WeightGemm(host, rd, 2 * H, H, tag + " R[z,r]");
      dw.r_h = WeightGemm(host, rd + 2 * H * H, H, H, tag + " R[h]");
    } else {
      dw.r = WeightGemm(host, rd, G * H, H, tag + " R");
    }
    const float* bd = b ? b + int64_t(d) * 2 * G * H : nullptr;
    if (c.cell == Cell::kGru) {
      dw.bias.assign(size_t(6 * H), 0.f);
      if (bd) std::copy(bd, bd + 6 * H, dw.bias.begin());
    } else {
      dw.bias.assign(size_t(G * H), 0.f);
      if (bd)
        for (int64_t j = 0; j < G * H; ++j) dw.bias[size_t(j)] = bd[j] + bd[G * H + j];
    }
    if (p) dw.peep.assign(p + int64_t(d) * 3 * H, p + int64_t(d + 1) * 3 * H);
  }
  return dirs;
}

const float* f32(const mn_tensor* in, int n, int i) {
  return i < n && in[i].dtype != MN_UNDEFINED ? static_cast<const float*>(in[i].data) : nullptr;
}

class OnnxRecurrentKernel : public plugin::Kernel {
 public:
  OnnxRecurrentKernel(const Node& n, const mn_host_api* host) : host_(host), name_(n.name()) {
    cfg_ = read_config(n, cell_of(n.op()));
    op_ = n.op();
    bool constant = n.input(kW).is_constant() && n.input(kR).is_constant() &&
                    (!n.has_input(kB) || n.input(kB).is_constant()) &&
                    (cfg_.cell != Cell::kLstm || !n.has_input(kP) || n.input(kP).is_constant()) &&
                    cfg_.hidden > 0 && cfg_.input > 0;
    if (constant) {
      const mn_tensor* in = n.raw()->inputs;
      int ni = n.num_inputs();
      dirs_ = pack(cfg_, host_, who(), f32(in, ni, kW), f32(in, ni, kR), f32(in, ni, kB),
                   cfg_.cell == Cell::kLstm ? f32(in, ni, kP) : nullptr);
      packed_ = true;
    }
  }

  const char* name() const override {
    return cfg_.cell == Cell::kLstm ? "f32_lstm_service_gemm"
           : cfg_.cell == Cell::kGru ? "f32_gru_service_gemm" : "f32_rnn_service_gemm";
  }

  size_t scratch_bytes(const mn_tensor* in, int, const mn_tensor*, int) const override {
    int64_t seq, batch, H;
    dims(in, &seq, &batch, &H);
    const int64_t G = cfg_.gates;
    // Floats: X*W^T for all steps, one step's H*R^T, h, c, GRU's r.h and z,r; then the
    // sequence lengths (int64, 8-byte aligned after the floats' even count).
    const int64_t floats = seq * batch * G * H + batch * G * H + 4 * batch * H + 2 * batch * H;
    return size_t(floats + (floats & 1)) * sizeof(float) + size_t(batch) * sizeof(int64_t);
  }

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    int64_t seq, batch, H;
    dims(in, &seq, &batch, &H);
    const double I = double(in[kX].dims[2]);
    return 2.0 * cfg_.num_directions * seq * batch * cfg_.gates * H * (I + H);
  }

  void run(const RunContext& ctx, const mn_tensor* in, int ni, mn_tensor* out, int no) const override {
    int64_t seq, batch, H;
    dims(in, &seq, &batch, &H);
    const int64_t I = in[kX].dims[2], G = cfg_.gates, D = cfg_.num_directions;
    std::vector<DirWeights> runtime;
    const std::vector<DirWeights>* dirs = &dirs_;
    if (!packed_) {
      RnnConfig c = cfg_;
      c.hidden = H;
      c.input = I;
      runtime = pack(c, host_, who(), f32(in, ni, kW), f32(in, ni, kR), f32(in, ni, kB),
                     c.cell == Cell::kLstm ? f32(in, ni, kP) : nullptr);
      dirs = &runtime;
    }
    float* xw = static_cast<float*>(ctx.scratch());
    float* step = xw + seq * batch * G * H;
    float* h = step + batch * G * H;
    float* c = h + batch * H;
    float* tmp = c + batch * H;   // GRU: r (.) H(t-1); [batch, H]
    float* zr = tmp + batch * H;  // GRU: activated z, r; [batch, 2H]
    const int64_t floats = seq * batch * G * H + batch * G * H + 4 * batch * H + 2 * batch * H;
    int64_t* lens = reinterpret_cast<int64_t*>(xw + floats + (floats & 1));
    // Sequence lengths.
    std::fill(lens, lens + batch, seq);
    if (ni > kSeqLens && in[kSeqLens].dtype != MN_UNDEFINED) {
      for (int64_t b = 0; b < batch; ++b) {
        int64_t l = in[kSeqLens].dtype == MN_I64 ? static_cast<const int64_t*>(in[kSeqLens].data)[b]
                                                  : static_cast<const int32_t*>(in[kSeqLens].data)[b];
        if (l < 0 || l > seq)
          throw PluginError(who() + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(l) +
                            " is outside [0, " + std::to_string(seq) + "]");
        lens[b] = l;
      }
    }
    const int64_t max_len = batch ? *std::max_element(lens, lens + batch) : 0;
    const bool layout1 = cfg_.layout == 1;
    float* Y = no > kY ? static_cast<float*>(out[kY].data) : nullptr;
    float* Yh = no > kYh ? static_cast<float*>(out[kYh].data) : nullptr;
    float* Yc = no > kYc && cfg_.cell == Cell::kLstm ? static_cast<float*>(out[kYc].data) : nullptr;
    // Rows past a sequence's end are never written by the steps: they must read zero.
    if (Y && std::any_of(lens, lens + batch, [&](int64_t l) { return l < seq; }))
      std::memset(Y, 0, size_t(seq * D * batch * H) * sizeof(float));
    const float* X = static_cast<const float*>(in[kX].data);
    const float* h0 = f32(in, ni, kInitH);
    const float* c0 = cfg_.cell == Cell::kLstm ? f32(in, ni, kInitC) : nullptr;
    auto state_at = [&](int64_t d, int64_t b) { return layout1 ? (b * D + d) * H : (d * batch + b) * H; };
    auto x_row = [&](int64_t t, int64_t b) { return layout1 ? b * seq + t : t * batch + b; };
    auto y_at = [&](int64_t t, int64_t d, int64_t b) {
      return layout1 ? ((b * seq + t) * D + d) * H : ((t * D + d) * batch + b) * H;
    };
    const size_t grain = size_t(std::max<int64_t>(1, 8192 / std::max<int64_t>(1, G * H)));

    for (int64_t d = 0; d < D; ++d) {
      const DirWeights& dw = (*dirs)[size_t(d)];
      const bool rev = d == 1 || cfg_.reverse;
      const std::vector<Activation>& act = cfg_.acts[size_t(d)];
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t j = 0; j < H; ++j) {
          h[b * H + j] = h0 ? h0[state_at(d, b) + j] : 0.f;
          c[b * H + j] = c0 ? c0[state_at(d, b) + j] : 0.f;
        }
      }
      if (seq * batch > 0) dw.w.multiply(ctx.raw(), seq * batch, X, I, 0.f, xw, G * H);
      LstmParams lp{H, dw.bias.data(), dw.peep.empty() ? nullptr : dw.peep.data(), cfg_.clip,
                    cfg_.input_forget, act[0], act.size() > 1 ? act[1] : act[0], act.size() > 2 ? act[2] : act[0]};
      const bool simd = cfg_.cell == Cell::kLstm && lstm_simd_applies(lp);
      GruParams gp{H, dw.bias.data(), dw.bias.data() + 3 * H, cfg_.clip, cfg_.linear_before_reset, act[0],
                   act.size() > 1 ? act[1] : act[0]};
      RnnParams rp{H, dw.bias.data(), cfg_.clip, act[0]};
      for (int64_t s = 0; s < max_len; ++s) {
        auto t_of = [&](int64_t b) { return rev ? lens[b] - 1 - s : s; };
        if (cfg_.cell == Cell::kGru && !cfg_.linear_before_reset) {
          dw.r.multiply(ctx.raw(), batch, h, H, 0.f, step, G * H);
          ctx.parallel_for(size_t(batch), grain, [&](size_t b0, size_t b1) {
            for (int64_t b = int64_t(b0); b < int64_t(b1); ++b) {
              if (s >= lens[b]) continue;
              gru_gates(gp, xw + x_row(t_of(b), b) * G * H, step + b * G * H, zr + b * 2 * H);
              for (int64_t j = 0; j < H; ++j) tmp[b * H + j] = zr[b * 2 * H + H + j] * h[b * H + j];
            }
          });
          dw.r_h.multiply(ctx.raw(), batch, tmp, H, 0.f, step + 2 * H, G * H);
        } else {
          dw.r.multiply(ctx.raw(), batch, h, H, 0.f, step, G * H);
        }
        ctx.parallel_for(size_t(batch), grain, [&](size_t b0, size_t b1) {
          for (int64_t b = int64_t(b0); b < int64_t(b1); ++b) {
            if (s >= lens[b]) continue;
            const int64_t t = t_of(b);
            const float* xr = xw + x_row(t, b) * G * H;
            const float* hr = step + b * G * H;
            float* hb = h + b * H;
            switch (cfg_.cell) {
              case Cell::kLstm:
                if (simd) lstm_step_simd(lp, xr, hr, c + b * H, hb);
                else lstm_step(lp, xr, hr, c + b * H, hb);
                break;
              case Cell::kRnn: rnn_step(rp, xr, hr, hb); break;
              case Cell::kGru:
                if (cfg_.linear_before_reset) gru_gates(gp, xr, hr, zr + b * 2 * H);
                gru_finish(gp, xr, hr + 2 * H, zr + b * 2 * H, hb, hb);
                break;
            }
            if (Y) std::memcpy(Y + y_at(t, d, b), hb, size_t(H) * sizeof(float));
          }
        });
      }
      for (int64_t b = 0; b < batch; ++b) {
        if (Yh) std::memcpy(Yh + state_at(d, b), h + b * H, size_t(H) * sizeof(float));
        if (Yc) std::memcpy(Yc + state_at(d, b), c + b * H, size_t(H) * sizeof(float));
      }
    }
  }

 private:
  std::string who() const { return "node '" + name_ + "' (" + op_ + ")"; }
  void dims(const mn_tensor* in, int64_t* seq, int64_t* batch, int64_t* H) const {
    *seq = in[kX].dims[cfg_.layout == 0 ? 0 : 1];
    *batch = in[kX].dims[cfg_.layout == 0 ? 1 : 0];
    *H = in[kR].dims[2];
  }

  const mn_host_api* host_;
  std::string name_, op_;
  RnnConfig cfg_;
  bool packed_ = false;
  std::vector<DirWeights> dirs_;
};

}  // namespace

std::unique_ptr<plugin::Kernel> make_onnx_recurrent(const Node& n, const mn_host_api* host) {
  return std::make_unique<OnnxRecurrentKernel>(n, host);
}

}  // namespace ops_lstm
}  // namespace minnow
