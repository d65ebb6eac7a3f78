#include "trace_output.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "container.h"
#include "trace_lock.h"
#include "write_signals.h"

namespace gpuscope::capture {
namespace {

// O_EXCL refuses whatever is at the path; say what it was.
std::string describe_create_error(const std::string& path, int err) {
  const std::string prefix = "cannot create trace " + path + ": ";
  struct stat st{};
  if (err != EEXIST && err != ELOOP) return prefix + std::strerror(err);
  if (lstat(path.c_str(), &st) != 0) return prefix + std::strerror(err);
  if (S_ISLNK(st.st_mode)) return prefix + "it is a symbolic link (refused, never followed)";
  if (S_ISFIFO(st.st_mode)) return prefix + "a FIFO already exists there (refused)";
  if (st.st_uid != geteuid()) return prefix + "a file of another user already exists there (refused)";
  return prefix + "a file already exists there (refused, never overwritten)";
}

}  // namespace

TraceOutput::~TraceOutput() { close(); }

bool TraceOutput::create(const std::string& path, std::string* error) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    failed_ = true;
    failure_ = describe_create_error(path, errno);
    if (error != nullptr) *error = failure_;
    return false;
  }
  // O_EXCL guarantees we created it; the check guards against exotic
  // filesystems that ignore it.
  struct stat st{};
  if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    failed_ = true;
    failure_ = "cannot create trace " + path + ": not a regular file owned by this user";
    if (error != nullptr) *error = failure_;
    close();
    return false;
  }
  created_ = true;
  container::lock_trace_for_writing(fd_);  // best effort: only `run --force` asks
  return true;
}

void TraceOutput::adopt(int fd, std::string path) {
  fd_ = fd;
  path_ = std::move(path);
}

bool TraceOutput::write_all(std::span<const std::byte> bytes) {
  WriteSignalGuard guard;  // SIGXFSZ: the header and first frame are written by the thread loading us
  const std::byte* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      guard.note_error(errno);
      failure_ = "writing trace " + path_ + " failed: " + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      failure_ = "writing trace " + path_ + " failed: no progress";
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

bool TraceOutput::append(std::span<const std::byte> bytes) {
  if (failed_ || fd_ < 0) return false;
  if (write_all(bytes)) {
    good_size_ += bytes.size();
    return true;
  }
  failed_ = true;
  if (remove_if_empty()) failure_ += " (nothing readable was written: the file was removed)";
  else cut_back();
  return false;
}

// A half-written frame would read as corruption; cut it off so the file
// ends on a frame boundary and reads as merely truncated.
void TraceOutput::cut_back() {
  if (ftruncate(fd_, static_cast<off_t>(good_size_)) == 0) lseek(fd_, 0, SEEK_END);
}

// O_EXCL made the file ours; the inode check makes sure the name still is.
bool TraceOutput::remove_if_empty() {
  if (!created_ || good_size_ > sizeof(container::FileHeader)) return false;
  struct stat ours{}, named{};
  if (fstat(fd_, &ours) != 0 || lstat(path_.c_str(), &named) != 0 || ours.st_dev != named.st_dev ||
      ours.st_ino != named.st_ino)
    return false;
  if (unlink(path_.c_str()) != 0) return false;
  created_ = false;
  return true;
}

bool TraceOutput::append_after_failure(std::span<const std::byte> bytes) {
  if (fd_ < 0) return false;
  const std::string first_failure = failure_;  // the reason worth reporting
  const bool landed = write_all(bytes);
  failure_ = first_failure;
  if (landed) {
    good_size_ += bytes.size();
    return true;
  }
  cut_back();
  return false;
}

void TraceOutput::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace gpuscope::capture
