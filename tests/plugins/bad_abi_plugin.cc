// A plugin that declares an ABI version the host must refuse (set by the build:
// BAD_ABI_MAJOR / BAD_ABI_MINOR).
#include <minnow/plugin.h>

static mn_status register_nothing(const mn_host_api*, const mn_registrar*, mn_error*) { return MN_OK; }

extern "C" MINNOW_PLUGIN_EXPORT const mn_plugin_info* minnow_plugin_entry(void) {
  static const mn_plugin_info info = {BAD_ABI_MAJOR, BAD_ABI_MINOR, "bad_abi_plugin", "0.0.1",
                                      "declares a foreign ABI version", register_nothing};
  return &info;
}
