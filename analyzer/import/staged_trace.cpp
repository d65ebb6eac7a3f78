#include "staged_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "chunk_builder.h"

namespace gpuscope::importer {
namespace {

std::string temporary_directory() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && dir[0] != '\0' ? dir : "/tmp";
}

// An unlinked file in `dir`: O_TMPFILE where the filesystem has it, else a
// named file removed at once.
int unlinked_file(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  std::string pattern = dir + "/.gpuscope-import-XXXXXX";
  fd = mkostemp(pattern.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(pattern.c_str());
  return fd;
}

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

}  // namespace

StagedTrace::~StagedTrace() {
  if (staged_fd_ >= 0) ::close(staged_fd_);
}

bool StagedTrace::open(const std::string& out_path, bool force, std::string* error) {
  out_path_ = out_path;
  force_ = force;
  std::string dir = temporary_directory();
  if (!out_path.empty()) {
    const std::filesystem::path parent = std::filesystem::path(out_path).parent_path();
    dir = parent.empty() ? "." : parent.string();
  }
  staged_fd_ = unlinked_file(dir);
  if (staged_fd_ < 0) {
    *error = "cannot create a temporary file in " + dir + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool StagedTrace::append(std::span<const std::byte> frame) {
  if (!failure_.empty()) return false;
  if (!write_all(staged_fd_, frame.data(), frame.size())) {
    failure_ = std::string("cannot write the imported trace: ") + std::strerror(errno);
    return false;
  }
  staged_bytes_ += frame.size();
  return true;
}

// The output: created, never following a link nor overwriting a file
// unless asked to (--force replaces a regular file only).
int StagedTrace::create_output(std::string* error) {
  if (out_path_.empty()) {
    const int fd = unlinked_file(temporary_directory());
    if (fd < 0) *error = "cannot create a temporary file in " + temporary_directory() + ": " + std::strerror(errno);
    return fd;
  }
  struct stat st{};
  if (force_ && ::lstat(out_path_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(out_path_.c_str());
  const int fd = ::open(out_path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create " + out_path_ + ": " +
             (errno == EEXIST ? std::string("a file already exists there (--force replaces it)") : std::strerror(errno));
  }
  return fd;
}

bool StagedTrace::copy_staged(int out_fd, std::string* error) {
  std::vector<char> buffer(1 << 20);
  for (uint64_t offset = 0; offset < staged_bytes_;) {
    const ssize_t got = ::pread(staged_fd_, buffer.data(), buffer.size(), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || !write_all(out_fd, buffer.data(), static_cast<size_t>(got))) {
      *error = std::string("cannot write the imported trace: ") + std::strerror(errno);
      return false;
    }
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

int StagedTrace::finish(std::span<const std::byte> first_frame, std::string* error) {
  if (!failure_.empty()) {
    *error = failure_;
    return -1;
  }
  const int fd = create_output(error);
  if (fd < 0) return -1;
  const auto header = capture::file_header_bytes();
  if (!write_all(fd, header.data(), header.size()) || !write_all(fd, first_frame.data(), first_frame.size()) ||
      !copy_staged(fd, error)) {
    if (error->empty()) *error = std::string("cannot write the imported trace: ") + std::strerror(errno);
    ::close(fd);
    if (!out_path_.empty()) ::unlink(out_path_.c_str());
    return -1;
  }
  ::close(staged_fd_);
  staged_fd_ = -1;
  return fd;
}

}  // namespace gpuscope::importer
