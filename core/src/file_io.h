// Read-only file mapping (internal).
#pragma once
#include <minnow/status.h>

#include <memory>
#include <string>

namespace minnow {

// A file's bytes, read-only: the file mapped (small files), or read into anonymous memory
// on huge pages (large ones: map_file). Either way one munmap of map_size bytes frees it.
struct MappedFile {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t map_size = 0;
  ~MappedFile();
};

Result<std::shared_ptr<MappedFile>> map_file(const std::string& path);

}  // namespace minnow
