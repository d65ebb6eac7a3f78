// gpuscope's own writes (the trace, its lines on the program's stderr, a
// note to `gpuscope run`) must not raise SIGPIPE (a closed pipe) or SIGXFSZ
// (a write past RLIMIT_FSIZE) in the program: both kill it by default, and
// for gpuscope either is only a failed write. Not for the hot path (three
// system calls a write).
#pragma once

#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace gpuscope::capture {

// Blocks both signals on this thread for its lifetime; at the end consumes
// the one a failed write raised (reported through note_error: EPIPE,
// EFBIG), unless it was pending already: that one is the program's.
// Consumed even on a thread that blocks it itself (the writer thread, or a
// program's): left pending, it would strike once the thread unblocks it.
class WriteSignalGuard {
 public:
  WriteSignalGuard() {
    sigemptyset(&ours_);
    sigaddset(&ours_, SIGPIPE);
    sigaddset(&ours_, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &ours_, &old_);
    sigpending(&pending_before_);
  }
  ~WriteSignalGuard() {
    sigset_t raised;
    sigemptyset(&raised);
    if (pipe_raised_ && sigismember(&pending_before_, SIGPIPE) == 0) sigaddset(&raised, SIGPIPE);
    if (size_raised_ && sigismember(&pending_before_, SIGXFSZ) == 0) sigaddset(&raised, SIGXFSZ);
    const timespec zero{};
    if (pipe_raised_ || size_raised_)
      while (sigtimedwait(&raised, nullptr, &zero) > 0) {
      }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  WriteSignalGuard(const WriteSignalGuard&) = delete;
  WriteSignalGuard& operator=(const WriteSignalGuard&) = delete;

  // The errno of a failed write made under the guard.
  void note_error(int err) {
    pipe_raised_ |= err == EPIPE;
    size_raised_ |= err == EFBIG;
  }

 private:
  sigset_t ours_, old_, pending_before_;
  bool pipe_raised_ = false, size_raised_ = false;
};

}  // namespace gpuscope::capture
