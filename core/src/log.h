// The "minnow" spdlog logger (internal). Level from MINNOW_LOG (default: warn).
// Callers pass finished strings: spdlog's format templates (fmt) are instantiated only in
// log.cc, not in every file that logs; they were a quarter of libminnow's code.
#pragma once
#include <string>

namespace minnow {
// Same numbering as spdlog::level and the plugin ABI's log levels (0 trace .. 4 error).
enum class LogLevel : int { kTrace = 0, kDebug = 1, kInfo = 2, kWarn = 3, kError = 4 };
bool log_enabled(LogLevel level);
void log_message(LogLevel level, const std::string& message);
}  // namespace minnow
