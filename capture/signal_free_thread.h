// gpuscope's own threads (the writer, the GPU sampler, the control server,
// the last-thread watch) start with every signal blocked: the program's
// handlers must never run on them, and a SIGPIPE/SIGXFSZ from a failed write
// must stay with the write. Each is registered as gpuscope's while it runs
// (own_threads.h), so it never keeps the process alive.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

#include "own_threads.h"

namespace gpuscope::capture {

template <class F> std::thread start_signal_free_thread(F&& fn) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  note_own_thread_starting();
  std::thread t;
  try {
    t = std::thread([fn = std::forward<F>(fn)]() mutable {
      const OwnThreadMark mark;
      fn();
    });
  } catch (...) {
    own_thread_not_started();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
}

}  // namespace gpuscope::capture
