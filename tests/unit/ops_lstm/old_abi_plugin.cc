// A plugin as compiled against ABI 1.0 (before mn_node.attr_strings): it declares minor 0
// and registers an op with a shape function, to prove older minors still load and work.
#include <minnow/plugin.hpp>

namespace {

mn_status copy_shape(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return minnow::plugin::guarded(err, [&] {
    minnow::plugin::Node n(node);
    minnow::plugin::set_output(ctx, 0, n.input(0).dtype(), n.input(0).shape());
    return MN_OK;
  });
}

mn_status register_old(const mn_host_api*, const mn_registrar* reg, mn_error*) {
  mn_op_def def{sizeof(mn_op_def), "old", "Copy", 1, 1, copy_shape, nullptr};
  return reg->add_op(reg->host, &def);
}

}  // namespace

extern "C" MINNOW_PLUGIN_EXPORT const mn_plugin_info* minnow_plugin_entry(void) {
  static const mn_plugin_info info = {1, 0, "old_abi_plugin", "1.0.0", "built for ABI 1.0", register_old};
  return &info;
}
