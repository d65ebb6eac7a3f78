// gpuscope's own threads (the writer, the GPU sampler) start with every
// signal blocked: the program's handlers must never run on them, and a
// SIGPIPE/SIGXFSZ from a failed write must stay with the write.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace gpuscope::capture {

template <class F> std::thread start_signal_free_thread(F&& fn) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread t(std::forward<F>(fn));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
}

}  // namespace gpuscope::capture
