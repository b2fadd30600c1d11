// The cpu_dense backend: bids and prepares over the op table (ops_table.cc).
#include <algorithm>

#include "ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

// Cost model of the reference kernels: about 0.5 ns per flop, at least 1.
constexpr double kNsPerFlop = 0.5;

class CpuDenseBackend final : public plugin::Backend {
 public:
  const char* name() const override { return "cpu_dense"; }

  plugin::Bid bid(const Node& node) const override {
    std::string why;
    const OpEntry* e = lookup(node, &why);
    if (!e) return plugin::Bid::no(why);
    try {
      const double flops = e->bid(node);
      return plugin::Bid::yes(std::max(1.0, flops * kNsPerFlop), "reference kernel");
    } catch (const PluginError& err) {
      return plugin::Bid::no(err.what());
    }
  }

  std::unique_ptr<Kernel> prepare(const Node& node) const override {
    std::string why;
    const OpEntry* e = lookup(node, &why);
    if (!e) throw PluginError(why, MN_ERR_UNSUPPORTED);
    return e->make(node);
  }

 private:
  static const OpEntry* lookup(const Node& node, std::string* why) {
    const std::string domain = node.domain();
    if (!domain.empty() && domain != "ai.onnx") {
      *why = "cpu_dense implements only the default ONNX domain, not '" + domain + "'";
      return nullptr;
    }
    bool known = false;
    const OpEntry* e = find_op(node.raw()->op, node.op_version(), &known);
    if (!e) {
      if (known)
        *why = "op " + node.op() + " version " + std::to_string(node.op_version()) +
               " not implemented (cpu_dense covers opsets up to " + std::to_string(kMaxOpset) + ")";
      else
        *why = "op " + node.op() + " not implemented";
    }
    return e;
  }
};

}  // namespace

std::unique_ptr<plugin::Backend> make_backend() { return std::make_unique<CpuDenseBackend>(); }

}  // namespace cpu_dense
}  // namespace minnow
