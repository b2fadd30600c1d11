#include "file_io.h"

#include <minnow/model_builder.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace minnow {

MappedFile::~MappedFile() {
  if (data && size) munmap(const_cast<uint8_t*>(data), size);
}

static std::string errno_text() { return std::strerror(errno); }

Result<std::shared_ptr<MappedFile>> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open '" + path + "': " + errno_text());
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("'" + path + "' is not a regular file");
  }
  auto m = std::make_shared<MappedFile>();
  m->size = static_cast<size_t>(st.st_size);
  if (m->size > 0) {
    // MAP_POPULATE: loading reads every byte (the data section's CRC), so the pages are
    // mapped in one call instead of a fault each (mapping and reading resnet50's 98 MB:
    // 17.5 -> 14.5 ms on a VM with slow faults). Reading large files into anonymous
    // memory on huge pages instead was tried and reverted: on the Zen 5 guest it halved
    // a load that followed another (70 -> 33 ms), but fresh anonymous memory there is
    // often memory the guest had handed back to the host, and bench/compare.sh's loads
    // became 194-243 ms against 12-13 ms mapped (the page cache stays resident).
    int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
    flags |= MAP_POPULATE;
#endif
    void* p = mmap(nullptr, m->size, PROT_READ, flags, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      m->size = 0;
      return io_error("cannot map '" + path + "': " + errno_text());
    }
    m->data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return m;
}

Result<std::vector<uint8_t>> read_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return io_error("cannot open '" + path + "': " + errno_text());
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  bool err = std::ferror(f);
  std::fclose(f);
  if (err) return io_error("error reading '" + path + "'");
  return bytes;
}

Status write_file_atomic(const std::string& path, const void* data, size_t size) {
  // Temporary file in the same folder so rename() is atomic on the same file system.
  std::random_device rd;
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create '" + tmp + "': " + errno_text());
  const uint8_t* p = static_cast<const uint8_t*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      std::string e = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      return io_error("cannot write '" + path + "': " + e);
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string e = errno_text();
    ::unlink(tmp.c_str());
    return io_error("cannot write '" + path + "': " + e);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string e = errno_text();
    ::unlink(tmp.c_str());
    return io_error("cannot rename '" + tmp + "' to '" + path + "': " + e);
  }
  return Status::ok();
}

}  // namespace minnow
