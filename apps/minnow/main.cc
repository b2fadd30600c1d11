// The minnow command: import, inspect, run, bench, plugins (compress and eval land with
// their issues).
#include "common.h"

#include <minnow/version.h>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace minnow::cli;
  CLI::App app{"Minnow: a small, fast inference engine for CPUs with its own compression toolchain."};
  app.set_version_flag("--version", std::string("minnow ") + MINNOW_VERSION);
  app.require_subcommand(1);
  GlobalOptions g;
  app.add_option("--plugin-path", g.plugin_paths, "Extra plugin file or folder (repeatable); MINNOW_PLUGIN_PATH is also searched");
  app.add_option("--log-level", g.log_level, "trace, debug, info, warn, error, off (default: MINNOW_LOG or warn)");
  register_plugins_command(app, g);
  register_inspect_command(app, g);
  register_run_command(app, g);
  register_bench_command(app, g);
  register_import_command(app, g);
  register_eval_command(app, g);
#ifdef MINNOW_HAVE_COMPRESS
  register_compress_command(app, g);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const CliError& e) {
    std::fprintf(stderr, "minnow: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minnow: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
