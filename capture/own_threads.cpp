#include "own_threads.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace gpuscope::capture {
namespace {

// More than gpuscope ever runs at once; a thread that finds no free slot is
// taken for one of the program's (it can delay the end, never hasten it).
constexpr int kSlots = 64;
constinit std::atomic<pid_t> g_tids[kSlots] = {};
constinit std::atomic<int> g_starting{0};

}  // namespace

void note_own_thread_starting() noexcept { g_starting.fetch_add(1, std::memory_order_acq_rel); }
void own_thread_not_started() noexcept { g_starting.fetch_sub(1, std::memory_order_acq_rel); }

OwnThreadMark::OwnThreadMark() noexcept {
  const pid_t tid = gettid();
  for (int i = 0; i < kSlots && slot_ < 0; ++i) {
    pid_t free = 0;
    if (g_tids[i].compare_exchange_strong(free, tid, std::memory_order_acq_rel)) slot_ = i;
  }
  g_starting.fetch_sub(1, std::memory_order_acq_rel);
}

OwnThreadMark::~OwnThreadMark() {
  if (slot_ >= 0) g_tids[slot_].store(0, std::memory_order_release);
}

bool is_own_thread(pid_t tid) noexcept {
  for (const auto& slot : g_tids)
    if (slot.load(std::memory_order_acquire) == tid) return true;
  return false;
}

int own_threads_alive() noexcept {
  int n = g_starting.load(std::memory_order_acquire);
  for (const auto& slot : g_tids) n += slot.load(std::memory_order_acquire) != 0 ? 1 : 0;
  return n;
}

char thread_state(pid_t tid) noexcept {
  char path[64], buf[256];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return '\0';
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return '\0';
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the thread's name may hold anything
  return p != nullptr && p[1] == ' ' ? p[2] : '\0';
}

}  // namespace gpuscope::capture
