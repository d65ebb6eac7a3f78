#include "byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace gpuscope::reader {
namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, uint64_t size, std::shared_ptr<const FileGrowth> growth = nullptr)
      : fd_(fd), size_(size), growth_(std::move(growth)) {}
  ~FileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  int descriptor() const override { return fd_; }
  bool read(uint64_t offset, void* out, size_t n) const override {
    if (offset > size_ || n > size_ - offset) return false;
    auto* p = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      p += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    return true;
  }
  // A hole costs nothing to skip this way; reading it would zero-fill every
  // page (10 GB of hole: seconds per pass).
  uint64_t next_data(uint64_t offset) const override {
    if (offset >= size_) return size_;
    const off_t data = ::lseek(fd_, static_cast<off_t>(offset), SEEK_DATA);
    if (data >= 0) return std::min<uint64_t>(static_cast<uint64_t>(data), size_);
    return errno == ENXIO ? size_ : offset;  // ENXIO: only a hole is left
  }
  bool wait_for_growth(uint64_t known, uint64_t* size) const override {
    if (growth_ == nullptr) return false;
    for (;;) {
      // Asked before the size is read: a size read after the writer ended is its last.
      const bool running = growth_->writer_running();
      struct stat st{};
      if (fstat(fd_, &st) != 0) return false;
      if (static_cast<uint64_t>(st.st_size) != known) {
        size_ = static_cast<uint64_t>(st.st_size);
        *size = size_;
        return true;
      }
      if (!running || !growth_->wait()) return false;
    }
  }

 private:
  int fd_;
  mutable uint64_t size_;  // grows only through wait_for_growth, on the reading thread
  std::shared_ptr<const FileGrowth> growth_;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  bool read(uint64_t offset, void* out, size_t n) const override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) return false;
    std::memcpy(out, bytes_.data() + offset, n);
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
};

std::string not_a_file(const std::string& path, const struct stat& st) {
  return path + " is " + file_kind_text(st.st_mode) + ", not a trace file";
}

// The inode `handle` (an O_PATH descriptor) names, opened for reading. Through
// /proc/self/fd it is that very inode, whatever the path names by now;
// without /proc the path is opened again, non-blocking so that a FIFO
// swapped in meanwhile cannot hang the open (the caller compares inodes).
int reopen_for_reading(int handle, const std::string& path) {
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  const std::string via_proc = "/proc/self/fd/" + std::to_string(handle);
  const int fd = ::open(via_proc.c_str(), kFlags);
  if (fd >= 0 || errno != ENOENT) return fd;
  return ::open(path.c_str(), kFlags);
}

}  // namespace

const char* file_kind_text(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a regular file";
  }
}

namespace {

// The descriptor of the regular file at `path`, its size in *size; -1 and
// *error otherwise. O_PATH opens nothing: no driver's open runs and no FIFO
// waits for a writer. Only once that descriptor shows a regular file is the
// same inode opened for reading.
int open_regular_file(const std::string& path, uint64_t* size, std::string* error) {
  const int handle = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (handle < 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return -1;
  }
  struct stat checked{};
  if (fstat(handle, &checked) != 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    ::close(handle);
    return -1;
  }
  if (!S_ISREG(checked.st_mode)) {
    *error = not_a_file(path, checked);
    ::close(handle);
    return -1;
  }
  const int fd = reopen_for_reading(handle, path);
  const int open_errno = errno;
  ::close(handle);
  if (fd < 0) {
    *error = "cannot open " + path + ": " + std::strerror(open_errno);
    return -1;
  }
  struct stat opened{};
  if (fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_ino != checked.st_ino ||
      opened.st_dev != checked.st_dev) {
    ::close(fd);
    *error = "cannot open " + path + ": it was replaced while being opened";
    return -1;
  }
  *size = static_cast<uint64_t>(opened.st_size);
  return fd;
}

}  // namespace

std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string* error) {
  return open_growing_file_source(path, nullptr, error);
}

std::unique_ptr<ByteSource> open_growing_file_source(const std::string& path, std::shared_ptr<const FileGrowth> growth,
                                                     std::string* error) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size, error);
  if (fd < 0) return nullptr;
  return std::make_unique<FileSource>(fd, size, std::move(growth));
}

std::unique_ptr<ByteSource> descriptor_source(int fd) {
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return nullptr;
  }
  return std::make_unique<FileSource>(fd, static_cast<uint64_t>(st.st_size));
}

std::unique_ptr<ByteSource> memory_source(std::span<const uint8_t> bytes) {
  return std::make_unique<MemorySource>(bytes);
}

}  // namespace gpuscope::reader
