// A well-formed test plugin: a backend "test_backend" that runs Relu (cheaply, to win the
// bid only when asked) and a custom op "test::AddConst" (shape function + kernel), plus
// "test::Fail" whose kernel throws: enough to exercise loading, bidding, op plugins and
// fault handling through the real ABI.
#include <minnow/plugin.hpp>

#include <cstring>

namespace {

using namespace minnow::plugin;

class AddConstKernel : public Kernel {
 public:
  explicit AddConstKernel(float c) : c_(c) {}
  const char* name() const override { return "f32_add_const_test"; }
  void run(const RunContext&, const mn_tensor* in, int, mn_tensor* out, int) const override {
    TensorRef x{&in[0]};
    const float* src = x.data<float>();
    float* dst = static_cast<float*>(out[0].data);
    for (int64_t i = 0; i < x.elements(); ++i) dst[i] = src[i] + c_;
  }

 private:
  float c_;
};

class FailKernel : public Kernel {
 public:
  const char* name() const override { return "fail_test"; }
  void run(const RunContext&, const mn_tensor*, int, mn_tensor*, int) const override {
    throw PluginError("deliberate failure from the test kernel", MN_ERR_INTERNAL);
  }
};

class ReluKernel : public Kernel {
 public:
  const char* name() const override { return "f32_relu_test"; }
  void run(const RunContext&, const mn_tensor* in, int, mn_tensor* out, int) const override {
    TensorRef x{&in[0]};
    const float* src = x.data<float>();
    float* dst = static_cast<float*>(out[0].data);
    for (int64_t i = 0; i < x.elements(); ++i) dst[i] = src[i] > 0 ? src[i] : 0;
  }
};

class TestBackend : public Backend {
 public:
  const char* name() const override { return "test_backend"; }
  Bid bid(const Node& n) const override {
    if (n.domain() == "test" && (n.op() == "AddConst" || n.op() == "Fail")) return Bid::yes(1);
    // Relu: an expensive bid, so a real backend wins unless this one is forced.
    if (n.domain().empty() && n.op() == "Relu") return Bid::yes(1e12, "test backend, slow on purpose");
    return Bid::no("test backend runs only test ops and Relu");
  }
  std::unique_ptr<Kernel> prepare(const Node& n) const override {
    if (n.op() == "AddConst") return std::make_unique<AddConstKernel>(n.attr_float("value", 1.f));
    if (n.op() == "Fail") return std::make_unique<FailKernel>();
    return std::make_unique<ReluKernel>();
  }
};

mn_status same_shape(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return guarded(err, [&] {
    Node n(node);
    set_output(ctx, 0, n.input(0).dtype(), n.input(0).shape());
    return MN_OK;
  });
}

mn_status register_test_plugin(const mn_host_api* host, const mn_registrar* reg, mn_error* err) {
  return guarded(err, [&] {
    if (host->abi_major != MINNOW_ABI_MAJOR) throw PluginError("host ABI mismatch");
    static mn_backend backend;  // lives as long as the library
    export_backend(std::make_unique<TestBackend>(), &backend);
    if (reg->add_backend(reg->host, &backend) != MN_OK) throw PluginError("add_backend failed");
    for (const char* op : {"AddConst", "Fail"}) {
      mn_op_def def{};
      def.struct_size = sizeof def;
      def.domain = "test";
      def.name = op;
      def.since_version = 1;
      def.max_version = 1;
      def.infer_shapes = same_shape;
      if (reg->add_op(reg->host, &def) != MN_OK) throw PluginError("add_op failed");
    }
    return MN_OK;
  });
}

}  // namespace

#ifndef TEST_PLUGIN_NAME
#define TEST_PLUGIN_NAME "test_plugin"
#endif

MINNOW_DEFINE_PLUGIN(TEST_PLUGIN_NAME, "1.2.3", "test plugin: backend test_backend, ops test::AddConst and test::Fail",
                     register_test_plugin)
