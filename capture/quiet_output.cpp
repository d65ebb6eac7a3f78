#include "quiet_output.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>

#include "clock.h"
#include "own_threads.h"
#include "signal_free_thread.h"

// glibc's standard streams themselves: `stdout` may have been reassigned to
// a stream the program has since closed; these objects are never freed.
extern "C" FILE _IO_2_1_stdout_;
extern "C" FILE _IO_2_1_stderr_;

namespace gpuscope::capture {
namespace {

constexpr uint64_t kLockWaitNs = 20'000'000;
constexpr long kCheckEveryNs = 250'000;
// A wait of the ending thread this long is not one of the short ones on
// the way out (a lock, a helper thread joined as it ends): it may be
// waiting for a thread held up on a stream.
constexpr uint64_t kWaitingMaxNs = 2'000'000;
constexpr uint64_t kProgramCodeMaxNs = 200'000'000;

std::atomic<pid_t> g_holder{0};      // the ending thread, once it first held the streams
std::atomic<bool> g_holding{false};  // it holds them now (a keeper runs)
std::atomic<int> g_end_work{0};      // EndWorkScopes open on it
FILE* g_held[2] = {};                // written before the keeper starts

// glibc's FILE lock is recursive and its release does not check the owner:
// the keeper gives back the count the ending thread took.
void give_streams_back() noexcept {
  for (FILE*& stream : g_held) {
    if (stream != nullptr) funlockfile(stream);
    stream = nullptr;
  }
  g_holding.store(false, std::memory_order_release);
}

void keep_streams(pid_t ending) {
  pthread_setname_np(pthread_self(), "gpuscope-quiet");
  const timespec check{0, kCheckEveryNs};
  uint64_t program_since = 0;  // when gpuscope's end work last closed
  uint64_t waiting_since = 0;  // when the ending thread began to wait in program code
  for (;;) {
    nanosleep(&check, nullptr);
    if (g_end_work.load(std::memory_order_acquire) > 0) {
      program_since = waiting_since = 0;
      continue;
    }
    const uint64_t now = monotonic_ns();
    if (program_since == 0) program_since = now;
    if (thread_state(ending) == 'R') waiting_since = 0;
    else if (waiting_since == 0) waiting_since = now;
    if ((waiting_since != 0 && now - waiting_since >= kWaitingMaxNs) || now - program_since > kProgramCodeMaxNs) break;
  }
  give_streams_back();
}

}  // namespace

void hold_program_output() noexcept {
  const pid_t self = gettid();
  pid_t holder = 0;
  if (!g_holder.compare_exchange_strong(holder, self, std::memory_order_acq_rel) && holder != self) return;
  // Taken again after a keeper gave them back (the ending thread waited on
  // program code between gpuscope's waits).
  if (g_holding.exchange(true, std::memory_order_acq_rel)) return;
  const uint64_t deadline = monotonic_ns() + kLockWaitNs;
  int held = 0;
  for (FILE* stream : {&_IO_2_1_stdout_, &_IO_2_1_stderr_}) {
    bool locked = false;
    while (!(locked = ftrylockfile(stream) == 0) && monotonic_ns() < deadline) sched_yield();
    if (locked) g_held[held++] = stream;
  }
  try {
    start_signal_free_thread([self] { keep_streams(self); }).detach();
  } catch (...) {
    give_streams_back();  // no keeper, no hold
  }
}

EndWorkScope::EndWorkScope() noexcept { g_end_work.fetch_add(1, std::memory_order_acq_rel); }
EndWorkScope::~EndWorkScope() { g_end_work.fetch_sub(1, std::memory_order_acq_rel); }

}  // namespace gpuscope::capture
