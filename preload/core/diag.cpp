#include "diag.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace gpuscope::capture {
namespace {

// Writes with SIGPIPE blocked on this thread; a SIGPIPE the write raised is
// consumed so it never reaches the program, one that was already pending is
// left alone.
void write_without_sigpipe(const char* data, size_t size) {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  while (size > 0) {
    const ssize_t n = write(STDERR_FILENO, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data += n;
    size -= static_cast<size_t>(n);
  }
  if (!was_pending) {
    timespec zero{};
    while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
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
  write_without_sigpipe(buf, static_cast<size_t>(n));
  errno = saved_errno;
}

}  // namespace gpuscope::capture
