// A well-formed test plugin: a backend "test_backend" that runs Relu (cheaply, to win the
// bid only when asked) and a custom op "test::AddConst" (shape function + kernel), plus
// "test::Fail" whose kernel throws, "test::TakeRows" whose output has run-time dims
// (ABI 1.2), and "test::Producer", which outputs what the host told its kernel about
// the kernel writing its input (ABI 1.8, set_producer): the AddConst's constant, or -1
// when told nothing. Enough to exercise loading, bidding, op plugins, fault handling,
// run-time-sized outputs and producer hints through the real ABI.
#include <minnow/plugin.hpp>

#include <cstring>

namespace {

using namespace minnow::plugin;

class AddConstKernel : public Kernel {
 public:
  explicit AddConstKernel(float c) : c_(c) {}
  const char* name() const override { return "f32_add_const_test"; }
  float constant() const { return c_; }
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

// test::TakeRows(x [N, ...], count int64 [1]) -> the first min(count, N) rows of x. The
// shape function bounds the output by x's shape; the kernel reports the rows it wrote.
// Attribute over=1 makes the kernel report one row more than the bound (a plugin bug).
class TakeRowsKernel : public Kernel {
 public:
  explicit TakeRowsKernel(bool over) : over_(over) {}
  const char* name() const override { return "take_rows_test"; }
  void run(const RunContext& ctx, const mn_tensor* in, int, mn_tensor* out, int) const override {
    TensorRef x{&in[0]};
    const int64_t n = x.dim(0), row = n ? x.elements() / n : 0;
    int64_t k = *static_cast<const int64_t*>(in[1].data);
    k = k < 0 ? 0 : k > n ? n : k;
    std::memcpy(out[0].data, x.data<float>(), static_cast<size_t>(k * row) * sizeof(float));
    std::vector<int64_t> dims = x.shape();
    dims[0] = over_ ? n + 1 : k;
    ctx.set_output_dims(0, dims);
  }

 private:
  bool over_;
};

class ProducerKernel : public Kernel {
 public:
  const char* name() const override { return "producer_test"; }
  void set_producer(int input_index, Kernel& producer) override {
    auto* a = dynamic_cast<AddConstKernel*>(&producer);
    told_ = input_index == 0 && a ? a->constant() : 1000.0f;  // 1000: told of another kernel
  }
  void run(const RunContext&, const mn_tensor* in, int, mn_tensor* out, int) const override {
    float* dst = static_cast<float*>(out[0].data);
    for (int64_t i = 0; i < TensorRef{&in[0]}.elements(); ++i) dst[i] = told_;
  }

 private:
  float told_ = -1.0f;
};

class TestBackend : public Backend {
 public:
  const char* name() const override { return "test_backend"; }
  Bid bid(const Node& n) const override {
    if (n.domain() == "test" && (n.op() == "AddConst" || n.op() == "Fail" || n.op() == "TakeRows" || n.op() == "Producer"))
      return Bid::yes(1);
    // Relu: an expensive bid, so a real backend wins unless this one is forced.
    if (n.domain().empty() && n.op() == "Relu") return Bid::yes(1e12, "test backend, slow on purpose");
    return Bid::no("test backend runs only test ops and Relu");
  }
  std::unique_ptr<Kernel> prepare(const Node& n) const override {
    if (n.op() == "AddConst") return std::make_unique<AddConstKernel>(n.attr_float("value", 1.f));
    if (n.op() == "Fail") return std::make_unique<FailKernel>();
    if (n.op() == "TakeRows") return std::make_unique<TakeRowsKernel>(n.attr_int("over", 0) != 0);
    if (n.op() == "Producer") return std::make_unique<ProducerKernel>();
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

mn_status take_rows_shape(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return guarded(err, [&] {
    Node n(node);
    if (n.num_inputs() != 2 || n.input(0).dtype() != MN_F32 || n.input(0).rank() < 1 || n.input(1).dtype() != MN_I64)
      n.fail("takes x (float32, rank >= 1) and count (int64)");
    set_output(ctx, 0, MN_F32, n.input(0).shape());
    set_output_bound(ctx, 0);
    return MN_OK;
  });
}

mn_status register_test_plugin(const mn_host_api* host, const mn_registrar* reg, mn_error* err) {
  return guarded(err, [&] {
    if (host->abi_major != MINNOW_ABI_MAJOR) throw PluginError("host ABI mismatch");
    static mn_backend backend;  // lives as long as the library
    export_backend(std::make_unique<TestBackend>(), &backend);
    if (reg->add_backend(reg->host, &backend) != MN_OK) throw PluginError("add_backend failed");
    for (const char* op : {"AddConst", "Fail", "Producer"}) {
      mn_op_def def{};
      def.struct_size = sizeof def;
      def.domain = "test";
      def.name = op;
      def.since_version = 1;
      def.max_version = 1;
      def.infer_shapes = same_shape;
      if (reg->add_op(reg->host, &def) != MN_OK) throw PluginError("add_op failed");
    }
    mn_op_def take{};
    take.struct_size = sizeof take;
    take.domain = "test";
    take.name = "TakeRows";
    take.since_version = 1;
    take.max_version = 1;
    take.infer_shapes = take_rows_shape;
    if (reg->add_op(reg->host, &take) != MN_OK) throw PluginError("add_op failed");
    return MN_OK;
  });
}

}  // namespace

#ifndef TEST_PLUGIN_NAME
#define TEST_PLUGIN_NAME "test_plugin"
#endif

MINNOW_DEFINE_PLUGIN(TEST_PLUGIN_NAME, "1.2.3", "test plugin: backend test_backend, ops test::AddConst, test::Fail, test::TakeRows, test::Producer",
                     register_test_plugin)
