#include "shared_state.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.hpp"
#include "node.hpp"

namespace simgpu {

namespace {
constexpr uint64_t kMagic = 0x73696d6770750005ull;  // "simgpu" + layout version
// Intervals kept per device: several processes' full launch queues (the
// driver holds each to 1024 operations in flight), so the intervals around
// "now" are always still here when NVML asks.
constexpr uint32_t kRing = 16384;
constexpr int kProcs = 64;
constexpr int kKinds = static_cast<int>(Activity::Count);

// One logged busy interval, plus what lets NVML answer in O(log n + in
// flight) instead of scanning the whole ring under the lock the driver's
// launch path takes (a full scan per query held it ~50 us, 15 times per
// 20 Hz sample: a traced launch-bound program waited on simulated NVML).
struct Record {
  int64_t start, end;
  uint64_t bytes;
  uint32_t kind, sm_permille;
  int64_t logged;        // when it was logged: non-decreasing along the ring
  int64_t max_end;       // latest end of this and every earlier interval
  ActivityTotals total;  // full totals of its kind up to and including it
  // How many records back the latest one of each kind is (0: this one);
  // kRing: none in the ring, so everything of that kind is in `retired`.
  uint32_t back[kKinds];
};

// Per-process work is split as NVML's per-process samples split it: SM
// (kernels) and memory (copies and memsets).
enum ProcWork { kProcKernels, kProcCopies, kProcWorkKinds };

struct ProcSlot {
  int32_t pid;
  int32_t attached;
  int64_t memory;
  int64_t attached_ns;                 // when the process took the slot
  double busy_ns[kProcWorkKinds];      // every interval it logged, in full
  int64_t busy_until[kProcWorkKinds];  // latest end of those intervals
};

struct DeviceLog {
  pthread_mutex_t mu;
  uint64_t written;
  ActivityTotals retired[kKinds];  // intervals pushed out of the ring
  ActivityTotals running[kKinds];  // full totals of every interval logged
  uint64_t latest[kKinds];         // index + 1 of the latest of each kind; 0: none
  int64_t max_end;
  int64_t engine_free[SharedState::kMaxEngines];  // when each engine's last claimed work ends
  ProcSlot procs[kProcs];
  Record ring[kRing];
};

// Fraction of interval r that lies before `at`, applied to its totals.
void accumulate(const Record& r, int64_t at, ActivityTotals& out) {
  if (at <= r.start || r.end <= r.start) return;
  const double span = static_cast<double>(r.end - r.start);
  const double done = static_cast<double>(std::min(at, r.end) - r.start);
  out.busy_ns += done;
  out.bytes += r.bytes * (done / span);
  out.sm_busy_ns += done * r.sm_permille / 1000.0;
}

void add(ActivityTotals& out, const ActivityTotals& more) {
  out.busy_ns += more.busy_ns;
  out.bytes += more.bytes;
  out.sm_busy_ns += more.sm_busy_ns;
}

// Index one past the last record logged at or before `at`: intervals logged
// later start later (work is logged when it is queued and starts after), so
// they contribute nothing at `at`.
uint64_t logged_by(const DeviceLog& d, uint64_t first, int64_t at) {
  uint64_t lo = first, hi = d.written;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (d.ring[mid % kRing].logged <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Full totals of the kinds in `mask` over every record up to `upto`.
ActivityTotals full_totals(const DeviceLog& d, uint64_t first, uint64_t upto, unsigned mask) {
  ActivityTotals out;
  const Record& r = d.ring[upto % kRing];
  for (int k = 0; k < kKinds; ++k) {
    if (!(mask & (1u << k))) continue;
    const uint64_t back = r.back[k];
    if (back < kRing && upto - back >= first) add(out, d.ring[(upto - back) % kRing].total);
    else add(out, d.retired[k]);
  }
  return out;
}

// A process that exited is gone even while it is a zombie awaiting its parent.
bool alive(int pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
  char path[32], stat[256] = {};
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return true;
  const size_t n = std::fread(stat, 1, sizeof stat - 1, f);
  std::fclose(f);
  const char* state = std::strrchr(stat, ')');  // "pid (comm) S ..."
  return !(n > 0 && state && state[1] == ' ' && (state[2] == 'Z' || state[2] == 'X'));
}

class Lock {
 public:
  explicit Lock(pthread_mutex_t& mu) : mu_(mu) {
    // A process killed while holding the lock leaves it EOWNERDEAD; the log is
    // append-only counters, so taking it over is safe.
    if (pthread_mutex_lock(&mu_) == EOWNERDEAD) pthread_mutex_consistent(&mu_);
  }
  ~Lock() { pthread_mutex_unlock(&mu_); }

 private:
  pthread_mutex_t& mu_;
};

}  // namespace

struct Segment {
  uint64_t magic;
  DeviceLog devices[SharedState::kMaxDevices];
};

namespace {

void init_segment(Segment* seg) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  for (DeviceLog& d : seg->devices) pthread_mutex_init(&d.mu, &attr);
  pthread_mutexattr_destroy(&attr);
  __atomic_store_n(&seg->magic, kMagic, __ATOMIC_RELEASE);
}

// Opens (creating on first use) the named segment; flock serializes the
// creator's initialization against everyone else's first look.
Segment* open_shared(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  Segment* seg = nullptr;
  if (flock(fd, LOCK_EX) == 0) {
    struct stat st{};
    const bool known = fstat(fd, &st) == 0;
    const bool fresh = known && st.st_size == 0;
    const bool fits = known && static_cast<size_t>(st.st_size) == sizeof(Segment);
    if ((fresh && ftruncate(fd, sizeof(Segment)) == 0) || fits) {
      void* p = mmap(nullptr, sizeof(Segment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      seg = p == MAP_FAILED ? nullptr : static_cast<Segment*>(p);
    }
    if (seg && fresh) init_segment(seg);
    if (seg && __atomic_load_n(&seg->magic, __ATOMIC_ACQUIRE) != kMagic) {
      munmap(seg, sizeof(Segment));  // written by another simgpu layout
      seg = nullptr;
    }
    flock(fd, LOCK_UN);
  }
  close(fd);
  return seg;
}

Segment* open_private() {
  void* p = mmap(nullptr, sizeof(Segment), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::abort();
  auto* seg = static_cast<Segment*>(p);
  init_segment(seg);
  return seg;
}

// This process's pid without a system call: own_slot() runs under the lock
// on every launch, and a syscall there (~1 us on a VM) is a window in which
// NVML's queries wait, which no real driver's launch path has.
std::atomic<int> g_self_pid{0};

int self_pid() {
  int pid = g_self_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    static const bool reset_in_children = [] {
      return pthread_atfork(nullptr, nullptr, [] { g_self_pid.store(0, std::memory_order_relaxed); }) == 0;
    }();
    (void)reset_in_children;
    g_self_pid.store(pid = getpid(), std::memory_order_relaxed);
  }
  return pid;
}

// This process's slot, taking a dead process's one on first use; `hint` is
// where it was last time (a forked child inherits its parent's, hence the
// pid check). The caller holds d.mu.
ProcSlot* own_slot(DeviceLog& d, int& hint) {
  const int self = self_pid();
  if (hint >= 0 && hint < kProcs && d.procs[hint].pid == self) return &d.procs[hint];
  int free_slot = -1;
  for (int i = 0; i < kProcs; ++i) {
    if (d.procs[i].pid == self) return &d.procs[hint = i];
    if (free_slot < 0 && !alive(d.procs[i].pid)) free_slot = i;
  }
  if (free_slot < 0) return nullptr;
  d.procs[free_slot] = ProcSlot{self, 0, 0, now_ns(), {}, {}};
  return &d.procs[hint = free_slot];
}

// Charges an interval to the process that logged it (the one running the
// driver, as record() and claim() are called where the work is queued).
void charge(ProcSlot* s, Activity kind, int64_t start, int64_t end) {
  if (!s || end <= start) return;
  const int work = (activity_bit(kind) & kKernelActivities) ? kProcKernels : kProcCopies;
  s->attached = 1;  // work on the device means a context on it
  s->busy_ns[work] += static_cast<double>(end - start);
  s->busy_until[work] = std::max(s->busy_until[work], end);
}

// The attached processes' slots, copied under the lock; whether each is
// still alive (a kill and a read of /proc, tens of microseconds) is asked
// after it is released, so the launch path never waits for it.
std::vector<ProcSlot> attached_slots(DeviceLog& d) {
  std::vector<ProcSlot> slots;
  Lock lock(d.mu);
  for (const ProcSlot& s : d.procs)
    if (s.attached) slots.push_back(s);
  return slots;
}

}  // namespace

SharedState::SharedState(const NodeDesc& node) {
  const char* id = std::getenv("SIMGPU_SHARED_ID");
  // The layout version is part of the name: another simgpu build's segment
  // is never mapped with this one's layout.
  name_ = "/simgpu" + std::to_string(kMagic & 0xff) + "-" + std::to_string(getuid()) + "-" +
          (id && *id ? std::string(id) : node.fingerprint);
  segment_ = open_shared(name_);
  shared_ = segment_ != nullptr;
  shares_engines_ = shared_ && id && *id;
  if (!segment_) segment_ = open_private();
}

SharedState& SharedState::of(const NodeDesc& node) {
  static SharedState* state = new SharedState(node);  // never destroyed: used until exit
  return *state;
}

namespace {

// Logs one interval; the caller holds d.mu.
void log_interval(DeviceLog& d, Activity kind, int64_t start, int64_t end, uint64_t bytes, double sm_fraction) {
  Record& slot = d.ring[d.written % kRing];
  if (d.written >= kRing && slot.kind < kKinds) accumulate(slot, INT64_MAX, d.retired[slot.kind]);
  const auto permille = static_cast<uint32_t>(std::clamp(sm_fraction, 0.0, 1.0) * 1000.0);
  const auto k = static_cast<uint32_t>(kind);
  slot = Record{start, end, bytes, k, permille, now_ns(), 0, {}, {}};
  if (d.written > 0) slot.logged = std::max(slot.logged, d.ring[(d.written - 1) % kRing].logged);
  d.max_end = std::max(d.max_end, end);
  slot.max_end = d.max_end;
  if (k < kKinds) {
    accumulate(slot, INT64_MAX, d.running[k]);
    slot.total = d.running[k];
    d.latest[k] = d.written + 1;
  }
  for (int i = 0; i < kKinds; ++i) {
    const uint64_t back = d.latest[i] == 0 ? kRing : d.written + 1 - d.latest[i];
    slot.back[i] = static_cast<uint32_t>(std::min<uint64_t>(back, kRing));
  }
  ++d.written;
}

}  // namespace

void SharedState::record(int device, Activity kind, int64_t start, int64_t end, uint64_t bytes,
                         double sm_fraction) {
  if (device < 0 || device >= kMaxDevices) return;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  log_interval(d, kind, start, end, bytes, sm_fraction);
  charge(own_slot(d, slot_hint_[device]), kind, start, end);
}

int64_t SharedState::claim(int device, int engine, Activity kind, int64_t earliest, int64_t duration, uint64_t bytes,
                           double sm_fraction) {
  if (device < 0 || device >= kMaxDevices || engine < 0 || engine >= kMaxEngines) return earliest;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  const int64_t start = std::max(earliest, d.engine_free[engine]);
  d.engine_free[engine] = start + duration;
  log_interval(d, kind, start, start + duration, bytes, sm_fraction);
  charge(own_slot(d, slot_hint_[device]), kind, start, start + duration);
  return start;
}

// Intervals still running at `at` are taken in part; everything up to the
// newest record that every earlier one ended before `at` comes from the
// running totals. The scan covers only what was in flight at `at`.
ActivityTotals SharedState::totals(int device, unsigned mask, int64_t at) const {
  ActivityTotals out;
  if (device < 0 || device >= kMaxDevices) return out;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  const uint64_t first = d.written > kRing ? d.written - kRing : 0;
  uint64_t i = logged_by(d, first, at);
  for (; i > first; --i) {
    const Record& r = d.ring[(i - 1) % kRing];
    if (r.max_end <= at) break;
    if (r.kind < kKinds && (mask & (1u << r.kind))) accumulate(r, at, out);
  }
  if (i > first) {
    add(out, full_totals(d, first, i - 1, mask));
  } else {
    for (int k = 0; k < kKinds; ++k)
      if (mask & (1u << k)) add(out, d.retired[k]);
  }
  return out;
}

double SharedState::busy_percent(int device, unsigned mask, int64_t at, int64_t window) const {
  if (window <= 0) return 0;
  const double busy = totals(device, mask, at).busy_ns - totals(device, mask, at - window).busy_ns;
  return std::clamp(100.0 * busy / static_cast<double>(window), 0.0, 100.0);
}

double SharedState::bytes_per_second(int device, unsigned mask, int64_t at, int64_t window) const {
  if (window <= 0) return 0;
  const double bytes = totals(device, mask, at).bytes - totals(device, mask, at - window).bytes;
  return bytes * 1e9 / static_cast<double>(window);
}

void SharedState::attach_process(int device) {
  if (device < 0 || device >= kMaxDevices) return;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  if (ProcSlot* s = own_slot(d, slot_hint_[device])) s->attached = 1;
}

void SharedState::add_process_memory(int device, int64_t delta) {
  if (device < 0 || device >= kMaxDevices) return;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  if (ProcSlot* s = own_slot(d, slot_hint_[device])) s->memory = std::max<int64_t>(0, s->memory + delta);
}

std::vector<ProcessUsage> SharedState::processes(int device) const {
  std::vector<ProcessUsage> out;
  if (device < 0 || device >= kMaxDevices) return out;
  for (const ProcSlot& s : attached_slots(segment_->devices[device]))
    if (alive(s.pid)) out.push_back({s.pid, static_cast<uint64_t>(s.memory)});
  return out;
}

// Work is logged when it is queued, so what a process has queued to end
// after `at` has not run yet.  The slot keeps only totals, not intervals, so
// that part is taken as its work running back to back up to its latest end:
// exact for a process whose queued work runs without gaps (and for any once
// its work is over), an estimate while work with idle gaps is still queued.
std::vector<ProcessActivity> SharedState::process_activity(int device, int64_t at) const {
  std::vector<ProcessActivity> out;
  if (device < 0 || device >= kMaxDevices) return out;
  const auto done = [at](const ProcSlot& s, int work) {
    const double total = s.busy_ns[work];
    return total - std::clamp(static_cast<double>(s.busy_until[work] - at), 0.0, total);
  };
  for (const ProcSlot& s : attached_slots(segment_->devices[device]))
    if (alive(s.pid)) out.push_back({s.pid, s.attached_ns, done(s, kProcKernels), done(s, kProcCopies)});
  return out;
}

}  // namespace simgpu
