#include "file_io.h"

#include <minnow/model_builder.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace minnow {

MappedFile::~MappedFile() {
  if (data && map_size) munmap(const_cast<uint8_t*>(data), map_size);
}

static std::string errno_text() { return std::strerror(errno); }

namespace {

// From this size on a model file is read into anonymous memory on transparent huge pages
// instead of mapped. Loading reads every byte (the data section's CRC), and a mapped
// page-cache page costs a fault of its own when first touched even after MAP_POPULATE on
// a VM with slow faults (Zen 5 KVM guest, resnet50's 98 MB: populate 4 ms, then 45-52 ms
// to touch the 25,000 pages once); read into 2 MiB pages the same bytes take 25 ms and
// touching them 4-5 ms. Small files gain nothing from huge pages: they stay mapped.
constexpr size_t kReadIntoHugePagesFrom = size_t(8) << 20;
constexpr size_t kHugePage = size_t(2) << 20;

// The whole file into an anonymous mapping (huge pages asked for), made read-only after.
Status read_into_anonymous(int fd, const std::string& path, MappedFile* m) {
  const size_t cap = (m->size + kHugePage - 1) / kHugePage * kHugePage;
  void* p = mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return io_error("cannot allocate " + std::to_string(cap) + " bytes to read '" + path + "': " + errno_text());
  m->data = static_cast<const uint8_t*>(p);
  m->map_size = cap;  // unmapped by ~MappedFile, also on the errors below
#if defined(MADV_HUGEPAGE)
  (void)madvise(p, cap, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
  uint8_t* dst = static_cast<uint8_t*>(p);
  size_t done = 0;
  while (done < m->size) {
    // At most 1 GiB a call: Linux returns at most ~2 GiB from one read.
    const ssize_t n = ::pread(fd, dst + done, std::min(m->size - done, size_t(1) << 30), off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot read '" + path + "': " + errno_text());
    if (n == 0) return io_error("'" + path + "' shrank while being read (" + std::to_string(done) + " of " + std::to_string(m->size) + " bytes)");
    done += size_t(n);
  }
  if (mprotect(p, cap, PROT_READ) != 0) return io_error("cannot protect the bytes of '" + path + "': " + errno_text());
  return Status::ok();
}

}  // namespace

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
  if (m->size >= kReadIntoHugePagesFrom) {
    Status s = read_into_anonymous(fd, path, m.get());
    ::close(fd);
    if (!s) return s;
    return m;
  }
  if (m->size > 0) {
    // MAP_POPULATE: loading reads every byte (the data section's CRC), so the pages are
    // mapped in one call instead of a fault each (mapping and reading resnet50's 98 MB:
    // 17.5 -> 14.5 ms on a VM with slow faults).
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
    m->map_size = m->size;
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
