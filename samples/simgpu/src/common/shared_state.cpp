#include "shared_state.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node.hpp"

namespace simgpu {

namespace {
constexpr uint64_t kMagic = 0x73696d6770750002ull;  // "simgpu" + layout version
// Intervals kept per device: several processes' full launch queues (the
// driver holds each to 1024 operations in flight), so the intervals around
// "now" are always still here when NVML asks.
constexpr uint32_t kRing = 16384;
constexpr int kProcs = 64;
constexpr int kKinds = static_cast<int>(Activity::Count);

struct Record {
  int64_t start, end;
  uint64_t bytes;
  uint32_t kind, sm_permille;
};

struct ProcSlot {
  int32_t pid;
  int32_t attached;
  int64_t memory;
};

struct DeviceLog {
  pthread_mutex_t mu;
  uint64_t written;
  ActivityTotals retired[kKinds];  // intervals pushed out of the ring
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

ProcSlot* own_slot(DeviceLog& d) {
  const int self = getpid();
  ProcSlot* free_slot = nullptr;
  for (ProcSlot& s : d.procs) {
    if (s.pid == self) return &s;
    if (!free_slot && !alive(s.pid)) free_slot = &s;
  }
  if (free_slot) *free_slot = ProcSlot{self, 0, 0};
  return free_slot;
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
  if (!segment_) segment_ = open_private();
}

SharedState& SharedState::of(const NodeDesc& node) {
  static SharedState* state = new SharedState(node);  // never destroyed: used until exit
  return *state;
}

void SharedState::record(int device, Activity kind, int64_t start, int64_t end, uint64_t bytes,
                         double sm_fraction) {
  if (device < 0 || device >= kMaxDevices) return;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  Record& slot = d.ring[d.written % kRing];
  if (d.written >= kRing && slot.kind < kKinds) accumulate(slot, INT64_MAX, d.retired[slot.kind]);
  const auto permille = static_cast<uint32_t>(std::clamp(sm_fraction, 0.0, 1.0) * 1000.0);
  slot = Record{start, end, bytes, static_cast<uint32_t>(kind), permille};
  ++d.written;
}

ActivityTotals SharedState::totals(int device, unsigned mask, int64_t at) const {
  ActivityTotals out;
  if (device < 0 || device >= kMaxDevices) return out;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  for (int k = 0; k < kKinds; ++k) {
    if (!(mask & (1u << k))) continue;
    out.busy_ns += d.retired[k].busy_ns;
    out.bytes += d.retired[k].bytes;
    out.sm_busy_ns += d.retired[k].sm_busy_ns;
  }
  const uint64_t first = d.written > kRing ? d.written - kRing : 0;
  for (uint64_t i = first; i < d.written; ++i) {
    const Record& r = d.ring[i % kRing];
    if (r.kind < kKinds && (mask & (1u << r.kind))) accumulate(r, at, out);
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
  if (ProcSlot* s = own_slot(d)) s->attached = 1;
}

void SharedState::add_process_memory(int device, int64_t delta) {
  if (device < 0 || device >= kMaxDevices) return;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  if (ProcSlot* s = own_slot(d)) s->memory = std::max<int64_t>(0, s->memory + delta);
}

std::vector<ProcessUsage> SharedState::processes(int device) const {
  std::vector<ProcessUsage> out;
  if (device < 0 || device >= kMaxDevices) return out;
  DeviceLog& d = segment_->devices[device];
  Lock lock(d.mu);
  for (const ProcSlot& s : d.procs) {
    if (s.attached && alive(s.pid)) out.push_back({s.pid, static_cast<uint64_t>(s.memory)});
  }
  return out;
}

}  // namespace simgpu
