// The cpu_sparse backend: bids for Gemm / MatMul / Conv whose constant weights are sparse
// enough to beat cpu_dense (thresholds.cc), and prepares them with packed weights.
#include "backend.h"

#include "ops.h"

namespace minnow {
namespace cpu_sparse {

namespace {

class CpuSparseBackend final : public plugin::Backend {
 public:
  const char* name() const override { return "cpu_sparse"; }

  plugin::Bid bid(const Node& node) const override {
    const std::string domain = node.domain();
    if (!domain.empty() && domain != "ai.onnx") return plugin::Bid::no("only the ONNX domain");
    const std::string op = node.op();
    try {
      BidResult r;
      if (op == "Gemm" || op == "MatMul")
        r = fc_bid(node);
      else if (op == "Conv")
        r = conv_bid(node);
      else
        return plugin::Bid::no("only Gemm, MatMul and Conv with constant sparse weights");
      return plugin::Bid::yes(r.cost, "sparse " + r.reason);
    } catch (const PluginError& e) {
      return plugin::Bid::no(e.what());
    }
  }

  std::unique_ptr<Kernel> prepare(const Node& node) const override {
    const std::string op = node.op();
    if (op == "Gemm" || op == "MatMul") return fc_make(node);
    if (op == "Conv") return conv_make(node);
    throw PluginError(node_label(node) + ": not implemented by cpu_sparse", MN_ERR_UNSUPPORTED);
  }
};

}  // namespace

std::unique_ptr<plugin::Backend> make_backend() { return std::make_unique<CpuSparseBackend>(); }

}  // namespace cpu_sparse
}  // namespace minnow
