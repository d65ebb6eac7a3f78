#include "diag.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "write_signals.h"

namespace gpuscope::capture {
namespace {

void write_fully(int fd, const char* data, size_t size) {
  WriteSignalGuard guard;  // a closed pipe or a file at its size limit
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) guard.note_error(errno);
    if (n <= 0) break;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

void diag_line(const char* format, ...) {
  const int saved_errno = errno;
  char buf[1024];
  int n = std::snprintf(buf, sizeof buf, "gpuscope: ");
  va_list args;
  va_start(args, format);
  n += std::vsnprintf(buf + n, sizeof buf - static_cast<size_t>(n) - 1, format, args);
  va_end(args);
  if (n > static_cast<int>(sizeof buf) - 2) n = sizeof buf - 2;
  buf[n++] = '\n';
  write_fully(STDERR_FILENO, buf, static_cast<size_t>(n));
  errno = saved_errno;
}

void note_for_run(const std::string& notes_path, int pid, const std::string& exe, const std::string& why) {
  if (notes_path.empty()) return;
  const int saved_errno = errno;
  const int fd = open(notes_path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st{};
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
    const std::string line = std::to_string(pid) + "\t" + exe + "\t" + why + "\n";
    write_fully(fd, line.data(), line.size());  // one write: O_APPEND keeps lines of processes apart
  }
  if (fd >= 0) close(fd);
  errno = saved_errno;
}

}  // namespace gpuscope::capture
