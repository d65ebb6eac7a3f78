// How a trace being written is told from a finished one: its writer holds
// a POSIX write lock on the whole file from creation until the file is
// closed (the end of capture, exec, or the process's death, whichever comes
// first; the kernel drops the lock with the process). Shared by the writer
// (capture/trace_output.cpp) and `gpuscope run --force`, which must
// not delete a live run's trace.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

namespace gpuscope::container {

// Takes the lock on `fd` (open for writing); false if it could not be taken.
inline bool lock_trace_for_writing(int fd) {
  struct flock lock{};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;  // l_start 0, l_len 0: the whole file, however long it grows
  return fcntl(fd, F_SETLK, &lock) == 0;
}

// Whether a process is writing the trace open on `fd` (any access mode);
// *writer gets its pid (0 when it lives in another pid namespace).
inline bool trace_is_being_written(int fd, pid_t* writer) {
  struct flock lock{};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (fcntl(fd, F_GETLK, &lock) != 0 || lock.l_type == F_UNLCK) return false;
  *writer = lock.l_pid;
  return true;
}

}  // namespace gpuscope::container
