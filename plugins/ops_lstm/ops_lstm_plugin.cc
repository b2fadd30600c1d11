// The ops_lstm plugin: op definitions (shape functions) for ONNX RNN, LSTM, GRU and
// caffe::LSTM, and the backend "ops_lstm" that runs them. Its gate GEMMs come from the
// host's matmul services (cpu_dense, cpu_sparse), looked up at prepare time, since the
// providing plugin may be loaded after this one.
#include "kernels.h"
#include "rnn_config.h"
#include "weight_gemm.h"

namespace minnow {
namespace ops_lstm {
namespace {

using plugin::Bid;
using plugin::guarded;
using plugin::Node;
using plugin::PluginError;

// Newest ONNX opset whose RNN/LSTM/GRU semantics this was written and tested against.
constexpr int kMaxOpset = 22;

bool is_onnx_recurrent(const Node& n) {
  return n.domain().empty() && (n.op() == "LSTM" || n.op() == "GRU" || n.op() == "RNN");
}
bool is_caffe_lstm(const Node& n) { return n.domain() == "caffe" && n.op() == "LSTM"; }

mn_status onnx_recurrent_shapes(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return guarded(err, [&] {
    Node n(node);
    RnnConfig c = read_config(n, cell_of(n.op()));
    const int64_t D = c.num_directions;
    // Y: [seq, D, batch, H] (layout 1: [batch, seq, D, H]); Y_h, Y_c: [D, batch, H]
    // (layout 1: [batch, D, H]).
    std::vector<int64_t> y = c.layout ? std::vector<int64_t>{c.batch, c.seq, D, c.hidden}
                                      : std::vector<int64_t>{c.seq, D, c.batch, c.hidden};
    std::vector<int64_t> st = c.layout ? std::vector<int64_t>{c.batch, D, c.hidden}
                                       : std::vector<int64_t>{D, c.batch, c.hidden};
    int max_out = c.cell == Cell::kLstm ? 3 : 2;
    if (n.num_outputs() > max_out) n.fail("has " + std::to_string(n.num_outputs()) + " outputs; at most " + std::to_string(max_out));
    for (int i = 0; i < n.num_outputs(); ++i) plugin::set_output(ctx, i, MN_F32, i == kY ? y : st);
    return MN_OK;
  });
}

mn_status caffe_lstm_shapes(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return guarded(err, [&] {
    Node n(node);
    check_caffe_lstm(n);
    const int64_t T = n.input(0).dim(0), N = n.input(0).dim(1), H = n.input(4).dim(1);
    if (n.num_outputs() > 3) n.fail("has more than 3 outputs");
    for (int i = 0; i < n.num_outputs(); ++i)
      plugin::set_output(ctx, i, MN_F32, i == 0 ? std::vector<int64_t>{T, N, H} : std::vector<int64_t>{1, N, H});
    return MN_OK;
  });
}

class LstmBackend : public plugin::Backend {
 public:
  explicit LstmBackend(const mn_host_api* host) : host_(host) {}
  const char* name() const override { return "ops_lstm"; }

  Bid bid(const Node& n) const override {
    if (!is_onnx_recurrent(n) && !is_caffe_lstm(n)) return Bid::no("ops_lstm runs RNN, LSTM, GRU and caffe::LSTM only");
    if (is_onnx_recurrent(n) && n.op_version() > kMaxOpset)
      return Bid::no("opset " + std::to_string(n.op_version()) + " is newer than " + std::to_string(kMaxOpset));
    if (!matmul_available(host_)) return Bid::no("no matmul service registered (load the cpu_dense plugin)");
    double flops = 0;
    if (is_caffe_lstm(n)) {
      check_caffe_lstm(n);  // throws: the wrapper turns it into a refusal with the reason
      auto est = [](int64_t d) { return d < 0 ? 1.0 : double(d); };
      flops = 8.0 * est(n.input(0).dim(0)) * est(n.input(0).dim(1)) * est(n.input(4).dim(1)) *
              (est(n.input(0).dim(2)) + est(n.input(4).dim(1)));
    } else {
      RnnConfig c = read_config(n, cell_of(n.op()));
      auto est = [](int64_t d) { return d < 0 ? 1.0 : double(d); };
      flops = 2.0 * c.num_directions * est(c.seq) * est(c.batch) * c.gates * est(c.hidden) *
              (est(c.input) + est(c.hidden));
    }
    return Bid::yes(0.25 * flops + 1000.0, "recurrent cell, gate GEMMs through the matmul service");
  }

  std::unique_ptr<plugin::Kernel> prepare(const Node& n) const override {
    if (is_caffe_lstm(n)) return make_caffe_lstm(n, host_);
    if (is_onnx_recurrent(n)) return make_onnx_recurrent(n, host_);
    n.fail("not an op of the ops_lstm backend", MN_ERR_UNSUPPORTED);
  }

 private:
  const mn_host_api* host_;  // valid for the engine's lifetime
};

mn_status register_ops_lstm(const mn_host_api* host, const mn_registrar* reg, mn_error* err) {
  return guarded(err, [&] {
    if (!host || !reg) throw PluginError("no host or registrar");
    // One backend per registration: each engine gets one bound to its own host (services).
    mn_backend backend;
    plugin::export_backend(std::make_unique<LstmBackend>(host), &backend);
    mn_status s = reg->add_backend(reg->host, &backend);
    if (s != MN_OK) {
      backend.destroy(backend.user);
      throw PluginError("add_backend failed", s);
    }
    for (const char* op : {"RNN", "LSTM", "GRU"}) {
      mn_op_def def{sizeof(mn_op_def), "", op, 1, kMaxOpset, onnx_recurrent_shapes, nullptr, 0};
      if ((s = reg->add_op(reg->host, &def)) != MN_OK) throw PluginError(std::string("add_op ") + op + " failed", s);
    }
    mn_op_def caffe{sizeof(mn_op_def), "caffe", "LSTM", 1, 1, caffe_lstm_shapes, nullptr, 0};
    if ((s = reg->add_op(reg->host, &caffe)) != MN_OK) throw PluginError("add_op caffe::LSTM failed", s);
    return MN_OK;
  });
}

}  // namespace
}  // namespace ops_lstm
}  // namespace minnow

MINNOW_DEFINE_PLUGIN("ops_lstm", "0.1.0",
                     "ONNX RNN, LSTM, GRU and caffe::LSTM; gate GEMMs through the matmul services",
                     minnow::ops_lstm::register_ops_lstm)
