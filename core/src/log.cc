#include "log.h"

#include <minnow/engine.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <mutex>

namespace minnow {

spdlog::logger& log() {
  // Created on first use (no global constructors); logs go to stderr.
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("minnow");
    if (!l) l = spdlog::stderr_color_mt("minnow");
    l->set_pattern("[minnow %l] %v");
    l->set_level(spdlog::level::warn);
    if (const char* env = std::getenv("MINNOW_LOG")) l->set_level(spdlog::level::from_str(env));
    return l;
  }();
  return *logger;
}

void set_log_level(const std::string& level) { log().set_level(spdlog::level::from_str(level)); }

}  // namespace minnow
