// gpuscope's own threads (the writer, the GPU sampler, the control server,
// the last-thread watch): every thread started through
// start_signal_free_thread is registered here while it runs, so the process
// can tell when only gpuscope's threads are left (preload/process_end.h):
// they must never keep a process alive that would end without gpuscope.
#pragma once

#include <sys/types.h>

namespace gpuscope::capture {

// Counts a thread about to be started (until it registers itself), so that
// one not yet running is never missed.
void note_own_thread_starting() noexcept;
void own_thread_not_started() noexcept;  // its creation failed

// Registers the calling thread for the object's lifetime (and ends the
// count of note_own_thread_starting()).
class OwnThreadMark {
 public:
  OwnThreadMark() noexcept;
  ~OwnThreadMark();
  OwnThreadMark(const OwnThreadMark&) = delete;
  OwnThreadMark& operator=(const OwnThreadMark&) = delete;

 private:
  int slot_ = -1;  // -1: the registry was full; the thread counts as the program's
};

bool is_own_thread(pid_t tid) noexcept;

// A thread of this process as /proc/self/task/TID/stat says: 'R' running or
// runnable, 'S'/'D' waiting, 'Z' a zombie (a main thread that left with
// pthread_exit); '\0' when it is gone or unreadable.
char thread_state(pid_t tid) noexcept;
// Registered threads and threads still starting.
int own_threads_alive() noexcept;

}  // namespace gpuscope::capture
