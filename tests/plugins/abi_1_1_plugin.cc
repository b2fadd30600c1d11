// A plugin as built against ABI 1.1 (before run-time-sized outputs and
// mn_op_def.value_inputs): it declares minor 1 and registers its op definition with the
// 1.1 layout, followed in memory by bytes that must not be read as value_inputs. It proves
// older minors still load and run, and that the host reads only struct_size bytes.
#include <minnow/plugin.hpp>

#include <cstring>

namespace {

using namespace minnow::plugin;

// mn_op_def as ABI 1.1 laid it out, then poison where 1.2 put value_inputs.
struct OpDef11 {
  size_t struct_size;
  const char* domain;
  const char* name;
  int32_t since_version;
  int32_t max_version;
  mn_shape_fn infer_shapes;
  void* user;
};
struct OpDef11WithPoison {
  OpDef11 def;
  uint64_t poison;
};

class CopyKernel : public Kernel {
 public:
  const char* name() const override { return "copy_v11_test"; }
  void run(const RunContext&, const mn_tensor* in, int, mn_tensor* out, int) const override {
    TensorRef x{&in[0]};
    std::memcpy(out[0].data, in[0].data, static_cast<size_t>(x.elements()) * dtype_size(x.dtype()));
  }
};

class V11Backend : public Backend {
 public:
  const char* name() const override { return "v11_backend"; }
  Bid bid(const Node& n) const override {
    return n.domain() == "v11" && n.op() == "Copy" ? Bid::yes(1) : Bid::no("runs v11::Copy only");
  }
  std::unique_ptr<Kernel> prepare(const Node&) const override { return std::make_unique<CopyKernel>(); }
};

mn_status copy_shape(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return guarded(err, [&] {
    Node n(node);
    set_output(ctx, 0, n.input(0).dtype(), n.input(0).shape());
    return MN_OK;
  });
}

mn_status register_v11(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  return guarded(err, [&] {
    static mn_backend backend;
    export_backend(std::make_unique<V11Backend>(), &backend);
    if (reg->add_backend(reg->host, &backend) != MN_OK) throw PluginError("add_backend failed");
    static_assert(sizeof(OpDef11) == offsetof(mn_op_def, value_inputs), "1.1 layout is 1.2's prefix");
    OpDef11WithPoison d{{sizeof(OpDef11), "v11", "Copy", 1, 1, copy_shape, nullptr}, ~uint64_t(0)};
    if (reg->add_op(reg->host, reinterpret_cast<const mn_op_def*>(&d.def)) != MN_OK) throw PluginError("add_op failed");
    return MN_OK;
  });
}

}  // namespace

extern "C" MINNOW_PLUGIN_EXPORT const mn_plugin_info* minnow_plugin_entry(void) {
  static const mn_plugin_info info = {1, 1, "abi_1_1_plugin", "1.1.0", "built for ABI 1.1", register_v11};
  return &info;
}
