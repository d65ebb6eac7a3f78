#include "host_sampler.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "chunk_builder.h"
#include "clock.h"
#include "environment.h"
#include "own_threads.h"
#include "perf_ring.h"

namespace gpuscope::capture {
namespace {

static_assert(sizeof(fb::HostSample) == 16, "a HostSample is 16 bytes on disk (docs/trace-format.md)");

constexpr uint32_t kMaxDataPagesLog2 = 3;  // 8 pages (32 KiB) per ring: ~400 ms of samples at the default 250 Hz
constexpr uint32_t kMaxChainFrames = 64;   // GPUSCOPE_STACK_DEPTH's bound; below perf_event_max_stack's 127

constexpr uint64_t kThreadCheckNs = 1'000'000'000;  // how often threads sampled one by one are looked for

struct Ring {
  int fd = -1;
  std::byte* base = nullptr;
  size_t mapped = 0;
  pid_t tid = 0;  // a thread already running at start (its own event); 0: a CPU's inherited event
};

long perf_event_open(perf_event_attr* attr, pid_t pid, int cpu) {
  return syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

perf_event_attr sample_attr(const HostSamplerConfig& c, bool inherit, bool keep_to_threads) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;  // on-CPU time: a sample per period of the thread's own CPU time
  a.sample_period = 1'000'000'000ull / (c.hz == 0 ? 1 : c.hz);
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
  a.exclude_kernel = 1;  // what perf_event_paranoid = 2 allows; kernel time shows in the CPU-time samples
  a.exclude_hv = 1;
  a.exclude_callchain_kernel = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;  // the trace's clock
  a.sample_max_stack = static_cast<uint16_t>(std::min(c.max_frames + 1, kMaxChainFrames));
  a.inherit = inherit ? 1 : 0;
  a.inherit_thread = keep_to_threads ? 1 : 0;  // not into fork()ed children (Linux 5.13)
  a.remove_on_exec = keep_to_threads ? 1 : 0;
  return a;
}

std::string open_failure(int error) {
  std::string why = std::string("perf_event_open: ") + std::strerror(error);
  if (error == EACCES || error == EPERM)
    why += " (kernel.perf_event_paranoid above 2, or a seccomp filter: docs/interception.md)";
  else if (error == ENOSYS)
    why += " (no perf events in this kernel, or a seccomp filter)";
  return why;
}

// File descriptors the program has left under RLIMIT_NOFILE. The sampler
// takes at most an eighth of them (and at most 256), so that the program
// never runs out of them because of gpuscope.
size_t free_descriptors() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  size_t open = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++open;
    closedir(dir);
  }
  return limit.rlim_cur > open ? static_cast<size_t>(limit.rlim_cur) - open : 0;
}

// Data pages per ring (log2) so that `rings` rings fit in half the per-user
// allowance the kernel gives perf buffers (kernel.perf_event_mlock_kb): past
// it they count against the program's own locked-memory limit, which an
// RDMA or mlock user needs. Half: other traced processes of a run share it.
uint32_t data_pages_log2(size_t rings) {
  uint64_t kb = 516;  // the kernel's default
  if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_mlock_kb", "re")) {
    unsigned long long v = 0;
    if (std::fscanf(f, "%llu", &v) == 1) kb = v;
    std::fclose(f);
  }
  const uint64_t page_kb = static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
  const uint64_t per_ring = kb / page_kb / 2 / std::max<size_t>(rings, 1);  // header page included
  uint32_t log2 = 0;
  while (log2 < kMaxDataPagesLog2 && (uint64_t{1} << (log2 + 1)) + 1 <= per_ring) ++log2;
  return log2;
}

// The CPUs the main thread may run on (its threads inherit the mask).
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(getpid(), sizeof set, &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

class HostSampler final : public TraceSource {
 public:
  explicit HostSampler(const HostSamplerConfig& config)
      : config_(config), reader_(std::min(config.max_frames, kMaxChainFrames)) {}
  ~HostSampler() override { close_rings(); }

  void begin(ChunkBuilder& out) override {
    status_.period_ns = config_.hz == 0 ? 0 : 1'000'000'000ull / config_.hz;
    if (config_.hz == 0 || config_.intern_stack == nullptr) {
      status_.state = static_cast<uint8_t>(fb::HostSamplingState::Off);
    } else {
      begun_ns_ = monotonic_ns();
      start_pending_ = true;
      // What a trace cut short before the start says (SIGKILL, a crash).
      set_not_started("not started yet: sampling starts " + std::to_string(config_.start_after_ms) +
                      " ms into the capture");
      if (config_.start_after_ms == 0) start(begun_ns_);
    }
    write_status(out);
  }

  void poll(uint64_t now_ns, ChunkBuilder& out) override {
    if (start_pending_) {
      if (ending_) not_started_at_the_end(now_ns);
      else if (now_ns - begun_ns_ >= config_.start_after_ms * 1'000'000ull) start(now_ns);
    }
    for (Ring& ring : rings_) drain(ring, out);
    if (ending_) close_rings();
    else if (now_ns - last_thread_check_ns_ >= kThreadCheckNs) close_rings_of_gone_threads(now_ns);
    write_status(out);
  }

  // The last poll follows: it drains what is left, then lets the rings go.
  void end() override { ending_ = true; }

 private:
  // The first perf_event_open of a task event after a second without any in
  // the system makes the kernel switch its scheduler hooks on and wait out
  // an RCU grace period (4-15 ms measured on a 2-vCPU VM); the process
  // cannot end until that call returns. A program that ends within
  // start_after_ms never pays it (docs/interception.md).
  void start(uint64_t now_ns) {
    start_pending_ = false;
    status_.reason.clear();
    pid_ = getpid();
    open_process_rings();
    if (!rings_.empty()) open_thread_rings();
    status_.state = static_cast<uint8_t>(rings_.empty() ? fb::HostSamplingState::Unavailable
                                                        : fb::HostSamplingState::Active);
    last_thread_check_ns_ = now_ns;
  }

  void set_not_started(std::string why) {
    status_.state = static_cast<uint8_t>(fb::HostSamplingState::Unavailable);
    status_.reason = std::move(why);
  }

  void not_started_at_the_end(uint64_t now_ns) {
    start_pending_ = false;
    set_not_started("not started: the capture ended " + std::to_string((now_ns - begun_ns_) / 1'000'000) +
                    " ms in, before sampling's start at " + std::to_string(config_.start_after_ms) + " ms (" +
                    protocol::env::kCpuSamplingDelayMs + ")");
  }

  // Per CPU, on the main thread, inherited by every thread started later.
  void open_process_rings() {
    bool keep_to_threads = true;
    const std::vector<int> cpus = allowed_cpus();
    const size_t free = free_descriptors();
    descriptors_left_ = std::min<size_t>(free / 8, 256);
    if (cpus.size() > descriptors_left_) {
      note_failure("it would take " + std::to_string(cpus.size()) + " file descriptors (one per CPU), more than an "
                   "eighth of the " + std::to_string(free) + " the program has left (RLIMIT_NOFILE)");
      return;
    }
    pages_log2_ = data_pages_log2(cpus.size());
    for (int cpu : cpus) {
      perf_event_attr attr = sample_attr(config_, true, keep_to_threads);
      long fd = perf_event_open(&attr, pid_, cpu);
      if (fd < 0 && errno == EINVAL && keep_to_threads) {  // before Linux 5.13: filter by pid instead
        keep_to_threads = false;
        filter_pid_ = true;
        attr = sample_attr(config_, true, false);
        fd = perf_event_open(&attr, pid_, cpu);
      }
      if (!add_ring(fd)) return;  // the same refusal on every CPU: say it once
    }
  }

  // Threads that already run (an attach): one event each, not inherited.
  void open_thread_rings() {
    DIR* dir = opendir("/proc/self/task");
    if (dir == nullptr) return;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const pid_t tid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
      if (tid == pid_ || tid == gettid() || is_own_thread(tid)) continue;
      if (descriptors_left_ == 0) {
        note_failure("no file descriptors to spare (RLIMIT_NOFILE)");
        ++status_.threads_refused;
        continue;
      }
      perf_event_attr attr = sample_attr(config_, false, false);
      if (!add_ring(perf_event_open(&attr, tid, -1), tid)) ++status_.threads_refused;
    }
    closedir(dir);
  }

  // Maps the event's ring, as large as the memory-lock limit allows.
  bool add_ring(long fd, pid_t tid = 0) {
    if (fd < 0) {
      note_failure(open_failure(errno));
      return false;
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    for (int log2 = static_cast<int>(pages_log2_); log2 >= 0; --log2) {
      const size_t bytes = page * (1 + (size_t{1} << log2));
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
      if (p == MAP_FAILED) continue;
      rings_.push_back(Ring{static_cast<int>(fd), static_cast<std::byte*>(p), bytes, tid});
      --descriptors_left_;
      return true;
    }
    note_failure(std::string("mapping the sample buffer: ") + std::strerror(errno) +
                 " (the locked-memory limit: ulimit -l, kernel.perf_event_mlock_kb)");
    close(static_cast<int>(fd));
    return false;
  }

  void note_failure(std::string why) {
    if (status_.reason.empty()) status_.reason = std::move(why);
  }

  void drain(Ring& ring, ChunkBuilder& out) {
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(ring.base);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const std::span<const std::byte> data(ring.base + page, ring.mapped - page);
    const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    const uint64_t tail = meta->data_tail;  // only this thread writes it
    PerfReadCounts counts;
    const uint64_t done = reader_.read(data, tail, head, [&](const PerfSample& s) { keep(s, out); }, &counts);
    __atomic_store_n(&meta->data_tail, done, __ATOMIC_RELEASE);
    status_.lost += counts.lost;
    status_.unreadable += counts.unreadable;
  }

  void keep(const PerfSample& s, ChunkBuilder& out) {
    if (filter_pid_ && s.pid != static_cast<uint32_t>(pid_)) return;
    if (is_own_thread(static_cast<pid_t>(s.tid))) return;
    const uint32_t stack = config_.intern_stack(s.frames.data(), static_cast<uint32_t>(s.frames.size()));
    out.add(fb::HostSample(s.time_ns, s.tid, stack));
    ++status_.samples;
    if (threads_seen_.insert(s.tid).second) status_.threads = static_cast<uint32_t>(threads_seen_.size());
  }

  void close_rings() {
    for (Ring& ring : rings_) release(ring);
    rings_.clear();
  }

  // A thread sampled by its own event that has ended: its ring was just
  // drained for the last time, and its descriptor goes back to the program.
  void close_rings_of_gone_threads(uint64_t now_ns) {
    last_thread_check_ns_ = now_ns;
    std::erase_if(rings_, [&](Ring& ring) {
      if (ring.tid == 0 || thread_state(ring.tid) != '\0') return false;
      release(ring);
      ++descriptors_left_;
      return true;
    });
  }

  static void release(const Ring& ring) {
    munmap(ring.base, ring.mapped);
    close(ring.fd);
  }

  // The status when it changed since the last one written.
  void write_status(ChunkBuilder& out) {
    if (written_ && *written_ == status_) return;
    written_ = status_;
    out.set_host_sampling(status_);
  }

  HostSamplerConfig config_;
  PerfRecordReader reader_;
  std::vector<Ring> rings_;
  pid_t pid_ = 0;
  size_t descriptors_left_ = 0;
  uint32_t pages_log2_ = 0;
  uint64_t last_thread_check_ns_ = 0;  // data pages per ring, as the locked-memory allowance permits
  uint64_t begun_ns_ = 0;
  bool start_pending_ = false;  // begun, sampling not started yet (start_after_ms)
  bool filter_pid_ = false;
  bool ending_ = false;
  container::HostSamplingData status_;
  std::optional<container::HostSamplingData> written_;
  std::unordered_set<uint32_t> threads_seen_;
};

}  // namespace

std::unique_ptr<TraceSource> make_host_sampler(const HostSamplerConfig& config) {
  return std::make_unique<HostSampler>(config);
}

}  // namespace gpuscope::capture
