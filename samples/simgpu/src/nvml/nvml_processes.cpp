// simgpu's per-process NVML answers: each process's share of the device over
// a sampling window (nvmlDeviceGetProcessUtilization) and process names.
//
// The driver charges every interval it logs to the process that queued it
// (SharedState::process_activity), so any process on the node sees every
// other's work.  A real driver keeps a buffer of per-process samples and
// returns those newer than the caller's lastSeenTimeStamp; here a sample is
// made at the query, covering the time since the caller's previous answer.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "../common/clock.hpp"
#include "nvml_state.hpp"

using simgpu::ProcessActivity;
using simgpu::nvml::State;
using simgpu::nvml::with_device;

namespace {

// A process's busy time done at an answered sample, so that the next query
// naming that sample's timestamp as lastSeen covers exactly what followed.
struct Mark {
  unsigned long long ts_us = 0;  // the timestamp the answer carried; 0: none
  int64_t attached_ns = 0;       // tells a recycled pid from the process marked
  int64_t mono_ns = 0;           // simgpu::now_ns() at that answer
  double kernel_ns = 0, copy_ns = 0;
};

// A few marks per process: a second sampler in the same process, or a caller
// that keeps an older lastSeen after a NOT_FOUND, still finds its own.
struct Memo {
  std::array<Mark, 4> marks;
  size_t next = 0;
};

std::mutex g_memo_mu;
// Never destroyed: a sampler thread may still query during exit handlers.
auto& g_memo = *new std::map<std::pair<unsigned, int>, Memo>;

struct Sampled {
  ProcessActivity activity;
  nvmlProcessUtilizationSample_t sample;
  bool active;  // busy at all in its window
};

unsigned percent(double busy_ns, int64_t window_ns) {
  if (window_ns <= 0) return 0;
  return static_cast<unsigned>(std::clamp(100.0 * busy_ns / static_cast<double>(window_ns), 0.0, 100.0) + 0.5);
}

// Where p's window starts: the mark of the answer stamped `last_seen`, or,
// for a timestamp this process never answered with (0 included), when p
// attached, with nothing done yet.
Mark window_start(unsigned device, const ProcessActivity& p, unsigned long long last_seen) {
  const auto it = g_memo.find({device, p.pid});
  if (last_seen != 0 && it != g_memo.end()) {
    for (const Mark& m : it->second.marks)
      if (m.ts_us == last_seen && m.attached_ns == p.attached_ns) return m;
  }
  Mark start;
  start.attached_ns = start.mono_ns = p.attached_ns;
  return start;
}

// One sample per live process over (start, now]; the caller holds g_memo_mu.
std::vector<Sampled> sample_all(unsigned device, const std::vector<ProcessActivity>& procs,
                                unsigned long long last_seen, int64_t now_ns, unsigned long long now_us) {
  std::vector<Sampled> out;
  for (const ProcessActivity& p : procs) {
    const Mark start = window_start(device, p, last_seen);
    const double kernel = std::max(0.0, p.kernel_done_ns - start.kernel_ns);
    const double copy = std::max(0.0, p.copy_done_ns - start.copy_ns);
    const int64_t window = now_ns - start.mono_ns;
    const nvmlProcessUtilizationSample_t s{static_cast<unsigned>(p.pid), now_us, percent(kernel, window),
                                           percent(copy, window), 0, 0};
    out.push_back({p, s, kernel > 0 || copy > 0});
  }
  return out;
}

// Marks every live process at the answer's timestamp (listed or not: the
// caller's next lastSeen is that timestamp) and forgets exited ones.
void remember(unsigned device, const std::vector<Sampled>& all, int64_t now_ns, unsigned long long now_us) {
  std::vector<int> live;
  for (const Sampled& s : all) {
    Memo& memo = g_memo[{device, s.activity.pid}];
    memo.marks[memo.next++ % memo.marks.size()] =
        Mark{now_us, s.activity.attached_ns, now_ns, s.activity.kernel_done_ns, s.activity.copy_done_ns};
    live.push_back(s.activity.pid);
  }
  for (auto it = g_memo.lower_bound({device, 0}); it != g_memo.end() && it->first.first == device;) {
    if (std::find(live.begin(), live.end(), it->first.second) == live.end()) it = g_memo.erase(it);
    else ++it;
  }
}

nvmlReturn_t process_utilization(const nvmlDevice_st& d, const State& s, nvmlProcessUtilizationSample_t* out,
                                 unsigned* count, unsigned long long last_seen) {
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (d.desc->mig_mode) return NVML_ERROR_NOT_SUPPORTED;  // as nvmlDeviceGetUtilizationRates there
  // Both clocks at once: the window is measured on the model's clock, the
  // timestamp handed out is realtime.
  const int64_t now_ns = simgpu::now_ns();
  const auto now_us = static_cast<unsigned long long>(simgpu::nvml::realtime_us());
  const unsigned capacity = *count;
  *count = 0;
  if (last_seen >= now_us) return NVML_ERROR_NOT_FOUND;  // nothing can be newer
  const std::vector<ProcessActivity> procs = s.shared->process_activity(static_cast<int>(d.index), now_ns);
  std::lock_guard lock(g_memo_mu);
  const std::vector<Sampled> all = sample_all(d.index, procs, last_seen, now_ns, now_us);
  std::vector<nvmlProcessUtilizationSample_t> active;
  for (const Sampled& x : all)
    if (x.active) active.push_back(x.sample);
  if (active.empty()) return NVML_ERROR_NOT_FOUND;
  *count = static_cast<unsigned>(active.size());
  if (!out || capacity < active.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::copy(active.begin(), active.end(), out);
  remember(d.index, all, now_ns, now_us);
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp) {
  return with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    return process_utilization(d, s, utilization, processSamplesCount, lastSeenTimeStamp);
  });
}

// The kernel's name for the process (/proc/<pid>/comm), cut to fit.
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int length) {
  if (!simgpu::nvml::state()) return NVML_ERROR_UNINITIALIZED;
  if (!name || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  char path[32], comm[64] = {};
  std::snprintf(path, sizeof path, "/proc/%u/comm", pid);
  FILE* f = std::fopen(path, "re");
  if (!f) return NVML_ERROR_NOT_FOUND;
  size_t n = std::fread(comm, 1, sizeof comm - 1, f);
  std::fclose(f);
  while (n > 0 && comm[n - 1] == '\n') --n;
  if (n == 0) return NVML_ERROR_NOT_FOUND;
  n = std::min<size_t>(n, length - 1);
  std::memcpy(name, comm, n);
  name[n] = '\0';
  return NVML_SUCCESS;
}

}  // extern "C"
