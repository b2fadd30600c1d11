#include "log.h"

#include <minnow/engine.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

namespace minnow {
namespace {

spdlog::logger& logger() {
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

spdlog::level::level_enum to_spdlog(LogLevel level) {
  return static_cast<spdlog::level::level_enum>(std::clamp(static_cast<int>(level), 0, 4));
}

}  // namespace

bool log_enabled(LogLevel level) { return logger().should_log(to_spdlog(level)); }

void log_message(LogLevel level, const std::string& message) {
  logger().log(to_spdlog(level), spdlog::string_view_t(message.data(), message.size()));
}

void set_log_level(const std::string& level) { logger().set_level(spdlog::level::from_str(level)); }

}  // namespace minnow
