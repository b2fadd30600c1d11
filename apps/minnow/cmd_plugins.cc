// minnow plugins: what is loaded, from where, and what each plugin provides.
#include "common.h"

#include <minnow/plugin.h>

#include <cstdio>

namespace minnow {
namespace cli {

void register_plugins_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("plugins", "List loaded plugins with their versions, paths and what they provide");
  static bool json = false;
  cmd->add_flag("--json", json, "Machine-readable output");
  cmd->callback([&g] {
    auto engine = make_engine(g);
    auto plugins = engine->plugins();
    if (json) {
      std::printf("{\"abi\": \"%d.%d\", \"plugin_folder\": \"%s\", \"plugins\": [", MINNOW_ABI_MAJOR, MINNOW_ABI_MINOR,
                  json_escape(engine->default_plugin_folder()).c_str());
      for (size_t i = 0; i < plugins.size(); ++i) {
        const auto& p = plugins[i];
        std::printf("%s{\"name\": \"%s\", \"version\": \"%s\", \"path\": \"%s\", \"provides\": [", i ? ", " : "",
                    json_escape(p.name).c_str(), json_escape(p.version).c_str(), json_escape(p.path).c_str());
        for (size_t k = 0; k < p.provides.size(); ++k)
          std::printf("%s\"%s\"", k ? ", " : "", json_escape(p.provides[k]).c_str());
        std::printf("]}");
      }
      std::printf("], \"warnings\": [");
      auto w = engine->warnings();
      for (size_t i = 0; i < w.size(); ++i) std::printf("%s\"%s\"", i ? ", " : "", json_escape(w[i]).c_str());
      std::printf("]}\n");
      return;
    }
    std::printf("plugin ABI %d.%d; installed plugin folder: %s\n", MINNOW_ABI_MAJOR, MINNOW_ABI_MINOR,
                engine->default_plugin_folder().c_str());
    if (plugins.empty()) std::printf("no plugins loaded (set MINNOW_PLUGIN_PATH or --plugin-path)\n");
    for (const auto& p : plugins) {
      std::printf("%-16s %-8s %s\n", p.name.c_str(), p.version.c_str(), p.path.c_str());
      if (!p.description.empty()) std::printf("    %s\n", p.description.c_str());
      std::string prov;
      for (const auto& s : p.provides) prov += (prov.empty() ? "" : ", ") + s;
      std::printf("    provides: %s\n", prov.c_str());
    }
    for (const auto& w : engine->warnings()) std::printf("warning: %s\n", w.c_str());
  });
}

}  // namespace cli
}  // namespace minnow
