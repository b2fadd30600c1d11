// The smallest complete Minnow op plugin: a new op "acme::Swish" (y = x * sigmoid(beta*x))
// with its shape function, a kernel, and a backend that runs it. Built against the
// installed headers only (find_package(minnow)); docs/PLUGINS.md walks through it.
#include <minnow/plugin.hpp>

#include <cmath>

namespace {

using namespace minnow::plugin;

// 1. The kernel. Prepared once per model and shared by every session, so run() is const
//    and keeps no per-run state; threads come only from ctx.parallel_for.
class SwishKernel : public Kernel {
 public:
  explicit SwishKernel(float beta) : beta_(beta) {}
  const char* name() const override { return "f32_swish_acme"; }
  void run(const RunContext& ctx, const mn_tensor* in, int, mn_tensor* out, int) const override {
    const float* x = TensorRef{&in[0]}.data<float>();
    float* y = static_cast<float*>(out[0].data);
    ctx.parallel_for(size_t(TensorRef{&in[0]}.elements()), 4096, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) y[i] = x[i] / (1.f + std::exp(-beta_ * x[i]));
    });
  }
  int inplace_input() const override { return 0; }  // element-wise: y may overwrite x
  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 4.0 * double(TensorRef{&in[0]}.elements());
  }

 private:
  float beta_;
};

// 2. The backend: says whether it can run a node (and at what cost), then prepares it.
//    Attributes are read (and checked) here, once, not in run().
class AcmeBackend : public Backend {
 public:
  const char* name() const override { return "acme"; }
  Bid bid(const Node& n) const override {
    if (n.domain() != "acme" || n.op() != "Swish") return Bid::no("acme runs only acme::Swish");
    if (n.input(0).dtype() != MN_F32) return Bid::no("acme::Swish needs float32");
    return Bid::yes(4.0 * double(n.input(0).shape_known() ? n.input(0).elements() : 1));
  }
  std::unique_ptr<Kernel> prepare(const Node& n) const override {
    const float beta = n.attr_float("beta", 1.f);
    if (!std::isfinite(beta)) n.fail("attribute beta must be finite");  // names the node
    return std::make_unique<SwishKernel>(beta);
  }
};

// 3. The shape function: output 0 has input 0's type and shape (dims may be -1 while
//    planning a model with a symbolic batch).
mn_status swish_shape(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return guarded(err, [&] {
    Node n(node);
    if (n.num_inputs() != 1 || !n.has_input(0)) n.fail("takes exactly one input");
    set_output(ctx, 0, n.input(0).dtype(), n.input(0).shape());
    return MN_OK;
  });
}

// 4. Registration: called once per engine that loads the library.
mn_status register_acme(const mn_host_api* host, const mn_registrar* reg, mn_error* err) {
  return guarded(err, [&] {
    if (host->abi_major != MINNOW_ABI_MAJOR) throw PluginError("built for another ABI major");
    mn_backend backend;  // copied by the host; the host calls backend.destroy when done
    export_backend(std::make_unique<AcmeBackend>(), &backend);
    if (reg->add_backend(reg->host, &backend) != MN_OK) throw PluginError("add_backend failed");
    // Version range: the op's semantics at versions 1..1 (a changed meaning = version 2).
    mn_op_def def{sizeof(mn_op_def), "acme", "Swish", 1, 1, swish_shape, nullptr};
    return reg->add_op(reg->host, &def);
  });
}

}  // namespace

// 5. The entry point: ABI version (from the headers you build against), name, version.
MINNOW_DEFINE_PLUGIN("acme_swish", "1.0.0", "acme::Swish, an example out-of-tree op plugin", register_acme)
