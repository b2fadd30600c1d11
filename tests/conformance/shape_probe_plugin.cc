// Test-only backend: bids on every node and computes nothing (outputs are left as they
// are). With it forced, `onnx_conformance --shapes-only` checks the engine's shape
// functions (output shapes and element types) against every ONNX node test, whether or not
// a real kernel exists for the op yet.
#include <minnow/plugin.hpp>

#include <cstring>

namespace {

using namespace minnow::plugin;

class NopKernel : public Kernel {
 public:
  const char* name() const override { return "shape_probe_nop"; }
  void run(const RunContext&, const mn_tensor*, int, mn_tensor* outs, int n) const override {
    for (int i = 0; i < n; ++i) {
      TensorRef t{&outs[i]};
      if (t.t->data) std::memset(t.t->data, 0, static_cast<size_t>(t.elements()) * dtype_size(t.dtype()));
    }
  }
};

class ProbeBackend : public Backend {
 public:
  const char* name() const override { return "shape_probe"; }
  Bid bid(const Node&) const override { return Bid::yes(1e12, "shape probe (computes nothing)"); }
  std::unique_ptr<Kernel> prepare(const Node&) const override { return std::make_unique<NopKernel>(); }
};

mn_status register_probe(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  return guarded(err, [&] {
    static mn_backend table;
    export_backend(std::make_unique<ProbeBackend>(), &table);
    return reg->add_backend(reg->host, &table);
  });
}

}  // namespace

MINNOW_DEFINE_PLUGIN("shape_probe", "0.1.0", "test-only backend that computes nothing", register_probe)
