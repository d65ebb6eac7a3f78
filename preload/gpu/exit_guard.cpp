#include "exit_guard.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "quiet_output.h"

namespace gpuscope::gpu {
namespace {

constexpr uint64_t kRearmAfterNs = 250'000'000;
// An exit waits at most this long for a GPU call in progress (nvmlInit can
// take seconds on a real node); after it, the call is left to finish alone.
constexpr auto kExitWait = std::chrono::milliseconds(1000);

// Never destroyed: used by the exit handler and by the writer during exit.
std::timed_mutex& gpu_mutex() {
  static auto* m = new std::timed_mutex;
  return *m;
}

std::atomic<bool> g_exiting{false};
std::atomic<pid_t> g_owner{0};            // the process that armed the guard
std::atomic<uint64_t> g_first_armed_ns{0};
std::atomic<int> g_registrations{0};
std::atomic<bool> g_probe_pending{false};

void on_process_exit() {
  if (getpid() != g_owner.load(std::memory_order_acquire)) return;  // a fork child
  bool locked = !g_probe_pending.load(std::memory_order_acquire) && gpu_mutex().try_lock();
  if (!locked) {
    // A wait the program would not have: its other threads keep quiet
    // meanwhile, as during gpuscope's last write (quiet_output.h).
    capture::hold_program_output();
    const capture::EndWorkScope end_work;
    const auto deadline = std::chrono::steady_clock::now() + kExitWait;
    while (g_probe_pending.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    locked = gpu_mutex().try_lock_until(deadline);
  }
  g_exiting.store(true, std::memory_order_release);
  if (locked) gpu_mutex().unlock();
}

void register_handler() {
  g_owner.store(getpid(), std::memory_order_release);
  if (std::atexit(on_process_exit) == 0) g_registrations.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace

void probe_started(uint64_t now_ns) {
  g_probe_pending.store(true, std::memory_order_release);
  uint64_t unset = 0;
  if (g_first_armed_ns.compare_exchange_strong(unset, now_ns)) register_handler();
}

void probe_finished() { g_probe_pending.store(false, std::memory_order_release); }

void rearm_exit_guard(uint64_t now_ns) {
  const uint64_t first = g_first_armed_ns.load(std::memory_order_acquire);
  if (first == 0 || now_ns - first < kRearmAfterNs) return;
  int once = 1;
  if (g_registrations.compare_exchange_strong(once, 2) && std::atexit(on_process_exit) != 0)
    g_registrations.store(1, std::memory_order_release);
}

GpuCallScope::GpuCallScope() {
  if (g_exiting.load(std::memory_order_acquire)) return;
  gpu_mutex().lock();
  locked_ = true;
  ok_ = !g_exiting.load(std::memory_order_acquire);
}

GpuCallScope::~GpuCallScope() {
  if (locked_) gpu_mutex().unlock();
}

}  // namespace gpuscope::gpu
