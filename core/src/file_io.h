// Read-only file mapping (internal).
#pragma once
#include <minnow/status.h>

#include <memory>
#include <string>

namespace minnow {

struct MappedFile {
  const uint8_t* data = nullptr;
  size_t size = 0;
  ~MappedFile();
};

Result<std::shared_ptr<MappedFile>> map_file(const std::string& path);

}  // namespace minnow
