#include "host_worker.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "../common/clock.hpp"

namespace simgpu::drv {

struct HostWorker::State {
  struct Queue {
    std::map<TaskKey, std::function<void()>> tasks;
    std::optional<TaskKey> running;
    bool has_thread = false;
  };
  std::mutex mu;
  std::condition_variable changed;  // a task was queued or finished
  Queue bytes, functions;
  uint64_t next_seq = 0;
};

namespace {

constexpr auto kIdleExit = std::chrono::milliseconds(250);

// Never destroyed: detached threads and atexit-time callers may still use it.
// A forked child gets a fresh one: the parent's threads do not exist there.
HostWorker::State* g_state = nullptr;

HostWorker::State& state() {
  static const bool once = [] {
    g_state = new HostWorker::State;
    pthread_atfork(nullptr, nullptr, [] { g_state = new HostWorker::State; });
    return true;
  }();
  (void)once;
  return *g_state;
}

std::chrono::steady_clock::time_point at(int64_t ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));  // both CLOCK_MONOTONIC
}

bool done(const HostWorker::State::Queue& q, const TaskKey& key) {
  return !q.tasks.count(key) && !(q.running && *q.running == key);
}

// Whether a byte task that starts at or before t is queued or running.
bool bytes_pending_through(const HostWorker::State::Queue& q, int64_t t) {
  return (!q.tasks.empty() && q.tasks.begin()->first.start <= t) || (q.running && q.running->start <= t);
}

// Runs the queue's first task on the calling thread with the lock released.
void run_first(std::unique_lock<std::mutex>& lock, HostWorker::State& s, HostWorker::State::Queue& q) {
  auto it = q.tasks.begin();
  q.running = it->first;
  std::function<void()> task = std::move(it->second);
  q.tasks.erase(it);
  lock.unlock();
  task();
  lock.lock();
  q.running.reset();
  s.changed.notify_all();
}

// Waits for the next thing to do; false once the queue stayed empty for the
// idle period, after which the thread ends (a push starts a new one).
bool wait_for_work(std::unique_lock<std::mutex>& lock, HostWorker::State& s, HostWorker::State::Queue& q) {
  if (!q.tasks.empty()) {
    if (q.running) s.changed.wait(lock);
    else s.changed.wait_until(lock, at(q.tasks.begin()->first.start));
    return true;
  }
  if (s.changed.wait_for(lock, kIdleExit) == std::cv_status::timeout && q.tasks.empty()) {
    q.has_thread = false;
    return false;
  }
  return true;
}

void byte_mover(HostWorker::State* s) {
  std::unique_lock lock(s->mu);
  for (;;) {
    auto& q = s->bytes;
    if (!q.running && !q.tasks.empty() && q.tasks.begin()->first.start <= now_ns()) run_first(lock, *s, q);
    else if (!wait_for_work(lock, *s, q)) return;
  }
}

void host_function_runner(HostWorker::State* s) {
  std::unique_lock lock(s->mu);
  for (;;) {
    auto& q = s->functions;
    const bool due = !q.running && !q.tasks.empty() && q.tasks.begin()->first.start <= now_ns();
    // A callback runs once every byte task ordered before it has landed.
    const bool bytes_before = due && ((!s->bytes.tasks.empty() && s->bytes.tasks.begin()->first < q.tasks.begin()->first) ||
                                      (s->bytes.running && *s->bytes.running < q.tasks.begin()->first));
    if (due && !bytes_before) run_first(lock, *s, q);
    else if (due) s->changed.wait(lock);
    else if (!wait_for_work(lock, *s, q)) return;
  }
}

// Starts the queue's thread if it has none, with every signal blocked so the
// program's handlers keep running on its own threads.
void ensure_thread(HostWorker::State& s, HostWorker::State::Queue& q, void (*body)(HostWorker::State*),
                   const char* name) {
  if (q.has_thread) return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread([&s, body, name] {
    prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);  // wake up within microseconds of a task's start
    // A batch thread never preempts the thread that woke it: on a machine
    // with few cores the API call that queued a copy returns first, as it
    // would from a real driver whose DMA engine needs no CPU.
    const sched_param batch{};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
    pthread_setname_np(pthread_self(), name);
    body(&s);
  }).detach();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  q.has_thread = true;
}

TaskKey push(HostWorker::State& s, HostWorker::State::Queue& q, int64_t start, std::function<void()> task,
             void (*body)(HostWorker::State*), const char* name) {
  std::lock_guard lock(s.mu);
  const TaskKey key{start, ++s.next_seq};
  q.tasks.emplace(key, std::move(task));
  ensure_thread(s, q, body, name);
  s.changed.notify_all();
  return key;
}

}  // namespace

HostWorker& HostWorker::instance() {
  static HostWorker worker;
  return worker;
}

TaskKey HostWorker::push_bytes(int64_t start, std::function<void()> move) {
  State& s = state();
  return push(s, s.bytes, start, std::move(move), byte_mover, "simgpu-copy");
}

TaskKey HostWorker::push_host_function(int64_t start, std::function<void()> fn) {
  State& s = state();
  return push(s, s.functions, start, std::move(fn), host_function_runner, "simgpu-host");
}

void HostWorker::run_through(TaskKey key) {
  State& s = state();
  std::unique_lock lock(s.mu);
  while (!done(s.bytes, key)) {
    if (!s.bytes.running && !s.bytes.tasks.empty() && !(key < s.bytes.tasks.begin()->first))
      run_first(lock, s, s.bytes);
    else
      s.changed.wait(lock);
  }
}

bool HostWorker::bytes_done_through(int64_t t) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return !bytes_pending_through(s.bytes, t);
}

void HostWorker::wait_bytes_through(int64_t t) {
  State& s = state();
  std::unique_lock lock(s.mu);
  // The waiter lends a hand: it would only sleep while the mover worked.
  while (bytes_pending_through(s.bytes, t)) {
    if (!s.bytes.running && s.bytes.tasks.begin()->first.start <= t) run_first(lock, s, s.bytes);
    else s.changed.wait(lock);
  }
}

}  // namespace simgpu::drv
