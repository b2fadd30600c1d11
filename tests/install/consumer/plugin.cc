// A third-party op plugin built against the installed headers only: op "acme::Square".
#include <minnow/plugin.hpp>

namespace {
using namespace minnow::plugin;

class SquareKernel : public Kernel {
 public:
  const char* name() const override { return "f32_square_acme"; }
  void run(const RunContext&, const mn_tensor* in, int, mn_tensor* out, int) const override {
    TensorRef x{&in[0]};
    for (int64_t i = 0; i < x.elements(); ++i) static_cast<float*>(out[0].data)[i] = x.data<float>()[i] * x.data<float>()[i];
  }
};

class AcmeBackend : public Backend {
 public:
  const char* name() const override { return "acme"; }
  Bid bid(const Node& n) const override {
    return n.domain() == "acme" && n.op() == "Square" ? Bid::yes(1) : Bid::no("acme runs only acme::Square");
  }
  std::unique_ptr<Kernel> prepare(const Node&) const override { return std::make_unique<SquareKernel>(); }
};

mn_status square_shape(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return guarded(err, [&] {
    Node n(node);
    set_output(ctx, 0, n.input(0).dtype(), n.input(0).shape());
    return MN_OK;
  });
}

mn_status register_acme(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  return guarded(err, [&] {
    static mn_backend backend;
    export_backend(std::make_unique<AcmeBackend>(), &backend);
    reg->add_backend(reg->host, &backend);
    mn_op_def def{sizeof(mn_op_def), "acme", "Square", 1, 1, square_shape, nullptr};
    return reg->add_op(reg->host, &def);
  });
}
}  // namespace

MINNOW_DEFINE_PLUGIN("acme_ops", "1.0.0", "acme::Square, built out of tree", register_acme)
