// The "minnow" spdlog logger (internal). Level from MINNOW_LOG (default: warn).
#pragma once
#include <spdlog/spdlog.h>

namespace minnow {
spdlog::logger& log();
}
