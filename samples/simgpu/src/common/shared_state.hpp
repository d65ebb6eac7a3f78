// Device activity shared by every process on the simulated node.
//
// NVML answers for the whole GPU, whichever process asks: `gpuscope run`
// samples NVML in the parent while the traced child drives the device.  So the
// driver logs every modeled busy interval (kernels, copies, memsets) and every
// process's device memory into a POSIX shared-memory segment named after the
// node description, and libnvidia-ml reads utilization, PCIe traffic and
// memory use back out of it.  Without /dev/shm it degrades to process-local.
//
// Processes that name the same SIMGPU_SHARED_ID share more than NVML's view:
// the device's engines.  A real GPU time-slices the contexts of several
// processes, so one process's kernels and copies wait for another's; with a
// shared id the driver claims engine time here (claim()), and a co-tenant's
// burst delays this process's work.  Without an explicit id every process
// keeps its own engines (unrelated test processes that happen to run side by
// side on the default node do not slow each other).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace simgpu {

struct NodeDesc;

enum class Activity : uint32_t { KernelCompute, KernelMemory, CopyH2D, CopyD2H, CopyD2D, Memset, Count };

constexpr unsigned activity_bit(Activity a) { return 1u << static_cast<unsigned>(a); }
constexpr unsigned kKernelActivities = activity_bit(Activity::KernelCompute) | activity_bit(Activity::KernelMemory);
constexpr unsigned kAllActivities = (1u << static_cast<unsigned>(Activity::Count)) - 1;

// Cumulative activity up to an instant: busy time, bytes moved (DRAM bytes for
// kernels), and busy time weighted by the share of SMs the work occupied.
struct ActivityTotals {
  double busy_ns = 0, bytes = 0, sm_busy_ns = 0;
};

struct ProcessUsage {
  int pid;
  uint64_t memory_bytes;
};

// One process's device work up to an instant (simgpu::now_ns() clock): busy
// time of its kernels and of its copies and memsets that had run by then,
// and when the process attached to the device.
struct ProcessActivity {
  int pid;
  int64_t attached_ns;
  double kernel_done_ns, copy_done_ns;
};

class SharedState {
 public:
  static constexpr int kMaxDevices = 8;  // an HGX board

  // The segment of this process's node (SIMGPU_SHARED_ID overrides its name).
  static SharedState& of(const NodeDesc& node);

  // Logs an interval of `device`'s work, charged to the calling process (the
  // one whose driver queued it) for process_activity().
  void record(int device, Activity kind, int64_t start_ns, int64_t end_ns, uint64_t bytes,
              double sm_fraction);
  // Engine `engine` of `device` for `duration_ns`, starting no earlier than
  // `earliest_ns` nor before the engine's work from any process sharing it
  // ends; recorded like record(). Returns the start.
  int64_t claim(int device, int engine, Activity kind, int64_t earliest_ns, int64_t duration_ns, uint64_t bytes,
                double sm_fraction);
  // Whether processes sharing this segment share engines (an explicit
  // SIMGPU_SHARED_ID); claim() is then the way to schedule work.
  bool shares_engines() const { return shares_engines_; }
  static constexpr int kMaxEngines = 4;
  ActivityTotals totals(int device, unsigned kind_mask, int64_t at_ns) const;
  // Busy share of [at - window, at] in percent, and bytes per second.
  double busy_percent(int device, unsigned kind_mask, int64_t at_ns, int64_t window_ns) const;
  double bytes_per_second(int device, unsigned kind_mask, int64_t at_ns, int64_t window_ns) const;

  void attach_process(int device);
  void add_process_memory(int device, int64_t delta_bytes);
  std::vector<ProcessUsage> processes(int device) const;  // live processes only
  // Per-process busy time done by `at_ns`, live processes only.
  std::vector<ProcessActivity> process_activity(int device, int64_t at_ns) const;
  const std::string& name() const { return name_; }
  bool is_shared() const { return shared_; }

 private:
  explicit SharedState(const NodeDesc& node);
  struct Segment* segment_ = nullptr;
  std::string name_;
  bool shared_ = false;
  bool shares_engines_ = false;
  // Index of this process's slot per device, a guess checked under the
  // device lock: record() runs on every launch and a full slot search calls
  // kill() and reads /proc for the slots before a free one.
  int slot_hint_[kMaxDevices] = {-1, -1, -1, -1, -1, -1, -1, -1};
};

}  // namespace simgpu
