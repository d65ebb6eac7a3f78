// What the simulated device does on the host's behalf once an API call has
// returned: moving the bytes of copies and memsets, and running host
// functions (stream callbacks, cuLaunchHostFunc, graph host nodes).
//
// Each task carries the modeled instant its stream reaches it and a sequence
// number taken when the model scheduled it; tasks run in that order, one at a
// time, so a task never runs before the work it depends on (a dependency
// always starts no later and was scheduled earlier).  A byte mover thread
// runs byte tasks at their start; a caller that must wait for its own copy
// anyway (a synchronous copy) runs the queue up to it itself instead of
// waiting for a thread switch.  Host functions run on a second thread, once
// every byte task ordered before them is done, so a callback sees the data
// its stream copied.  Both threads start on demand, block every signal, and
// end after a quarter second without work (a program that leaves main with
// pthread_exit still exits).
#pragma once

#include <cstdint>
#include <functional>

namespace simgpu::drv {

struct TaskKey {
  int64_t start = 0;  // modeled instant the stream reaches the task
  uint64_t seq = 0;   // scheduling order
  bool operator<(const TaskKey& o) const { return start != o.start ? start < o.start : seq < o.seq; }
  bool operator==(const TaskKey& o) const { return start == o.start && seq == o.seq; }
};

class HostWorker {
 public:
  static HostWorker& instance();

  // Both pushes must happen in scheduling order (under the model's lock):
  // the key's sequence number is assigned here.
  TaskKey push_bytes(int64_t start, std::function<void()> move);
  TaskKey push_host_function(int64_t start, std::function<void()> fn);

  // Runs queued byte tasks up to `key` on the calling thread (waiting for
  // one another thread runs); returns once `key` is done.
  void run_through(TaskKey key);
  // Whether every byte task that starts at or before `t` is done; waits for it.
  bool bytes_done_through(int64_t t);
  void wait_bytes_through(int64_t t);

  struct State;  // host_worker.cpp

 private:
  HostWorker() = default;
};

}  // namespace simgpu::drv
