#include "run_follower.h"

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "container.h"
#include "environment.h"
#include "progress.h"
#include "trace_summary.h"

namespace gpuscope::cli {
namespace fs = std::filesystem;

namespace {

// How often the follower looks for the trace, and for more of it: the
// writer adds a frame every few milliseconds at most, and the program's end
// wakes the follower at once.
constexpr int kLookEveryMs = 5;
constexpr std::chrono::seconds kLookOftenFor{1};
constexpr int kLookSeldomMs = 100;
// Descriptors of the program looked through for its trace: one that holds
// more before creating it (rare: the trace is created as the library loads)
// is left to the analysis after the program.
constexpr int kMaxDescriptors = 1024;

}  // namespace

// The program's end, and the follower's stop, as an eventfd the follower
// sleeps on between looks at the file (FileGrowth).
class RunGrowth final : public reader::FileGrowth {
 public:
  static std::shared_ptr<RunGrowth> make() {
    auto g = std::shared_ptr<RunGrowth>(new RunGrowth);
    g->wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);  // CLOEXEC: the program inherits none of it
    return g->wake_ >= 0 ? g : nullptr;
  }
  ~RunGrowth() override { close(wake_); }

  bool writer_running() const override { return !ended_.load(std::memory_order_acquire); }
  bool wait() const override { return sleep(kLookEveryMs); }
  // Sleeps `ms` or until woken; false: stop.
  bool sleep(int ms) const {
    if (abandoned()) return false;
    pollfd fd{wake_, POLLIN, 0};
    poll(&fd, 1, ms);
    return !abandoned();
  }
  void end() { set_and_wake(ended_); }
  void abandon() { set_and_wake(abandoned_); }
  bool abandoned() const { return abandoned_.load(std::memory_order_acquire); }

 private:
  RunGrowth() = default;
  void set_and_wake(std::atomic<bool>& flag) {
    flag.store(true, std::memory_order_release);
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake_, &one, sizeof one);
  }

  int wake_ = -1;
  std::atomic<bool> ended_{false};
  std::atomic<bool> abandoned_{false};
};

namespace {

enum class Candidate { Ours, NotOurs, NotYet };

// Whether the regular file at `path` (`size` bytes now) is the trace
// process `pid` of run `run_id` writes: its first frame says so. A file too
// short to tell yet is looked at again at the next look.
Candidate check_candidate(const fs::path& path, off_t size, const std::string& run_id, pid_t pid) {
  if (static_cast<size_t>(size) < sizeof(container::FileHeader)) return Candidate::NotYet;
  const reader::FirstFrame first = reader::read_first_frame(path.string());
  if (!first.is_trace) return Candidate::NotOurs;
  if (!first.whole) return Candidate::NotYet;
  const bool ours = first.process && first.process->run_id == run_id && first.process->pid == pid;
  return ours ? Candidate::Ours : Candidate::NotOurs;
}

// Whether a thread of this process may leave SCHED_IDLE again: it needs
// CAP_SYS_NICE or an RLIMIT_NICE that allows nice 0 (sched(7)). Without
// either (a default container, an ordinary user) a follower starved by
// others' work after the program ends could not be raised, and would hold
// up the run's end for as long as it starves.
bool can_leave_idle_priority() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NICE, &limit) == 0 && (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= 20)) return true;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE)) != 0;
}

// The forwarded signals and the child's end are the main thread's.
void block_async_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2})
    sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace

std::unique_ptr<TraceFollower> TraceFollower::make(const fs::path& directory, std::string run_id) {
  const char* setting = std::getenv(protocol::env::kRunFollow);
  if (setting != nullptr && std::strcmp(setting, "off") == 0) return nullptr;
  struct stat st{};
  if (!can_leave_idle_priority() || stat(directory.c_str(), &st) != 0) return nullptr;
  auto growth = RunGrowth::make();
  if (growth == nullptr) return nullptr;
  return std::unique_ptr<TraceFollower>(new TraceFollower(st, std::move(run_id), std::move(growth)));
}

TraceFollower::TraceFollower(const struct stat& directory, std::string run_id, std::shared_ptr<RunGrowth> growth)
    : directory_device_(directory.st_dev),
      directory_inode_(directory.st_ino),
      run_id_(std::move(run_id)),
      growth_(std::move(growth)) {}

TraceFollower::~TraceFollower() {
  if (!thread_.joinable()) return;
  growth_->abandon();
  finish();
}

void TraceFollower::follow(pid_t pid) {
  thread_ = std::thread([this, pid] { run(pid); });
}

void TraceFollower::run(pid_t pid) {
  block_async_signals();
  {
    const std::lock_guard lock(mutex_);
    const sched_param normal{};
    if (!finishing_) idle_ = pthread_setschedparam(pthread_self(), SCHED_IDLE, &normal) == 0;
  }
  const reader::ProgressMuted muted;  // the program owns the terminal
  try {
    if (const std::string path = find_trace(pid); !path.empty()) analyze(path);
  } catch (...) {  // no memory, say: the trace is analyzed after the program instead
    followed_.reset();
  }
}

// Waits for the trace to be created; "" when the program ended first. A
// program that makes none (static, setuid: nothing preloaded) is looked at
// less often after its first second.
std::string TraceFollower::find_trace(pid_t pid) {
  const auto start = std::chrono::steady_clock::now();
  while (growth_->writer_running()) {
    if (std::string path = trace_among_open_files(pid); !path.empty()) return path;
    const bool early = std::chrono::steady_clock::now() - start < kLookOftenFor;
    if (!growth_->sleep(early ? kLookEveryMs : kLookSeldomMs)) return "";
  }
  return "";
}

// A regular file in the output directory that process `pid` has open and
// whose first frame names this run and that process.
std::string TraceFollower::trace_among_open_files(pid_t pid) {
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(fds.c_str());
  if (dir == nullptr) return "";
  std::string found;
  int seen = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    if (++seen > kMaxDescriptors) break;
    char target[4096];
    const ssize_t n = readlinkat(dirfd(dir), e->d_name, target, sizeof target - 1);
    if (n <= 0 || target[0] != '/') continue;  // pipes, sockets, anonymous files
    target[n] = '\0';
    struct stat st{}, parent{};
    const fs::path path(target);
    if (stat(target, &st) != 0 || !S_ISREG(st.st_mode) || looked_at_.contains({st.st_dev, st.st_ino})) continue;
    if (stat(path.parent_path().c_str(), &parent) != 0 || parent.st_dev != directory_device_ ||
        parent.st_ino != directory_inode_)
      continue;
    const Candidate c = check_candidate(path, st.st_size, run_id_, pid);
    if (c == Candidate::NotOurs) looked_at_.insert({st.st_dev, st.st_ino});
    if (c != Candidate::Ours) continue;
    device_ = st.st_dev;
    inode_ = st.st_ino;
    found = path.string();
    break;
  }
  closedir(dir);
  return found;
}

void TraceFollower::analyze(const std::string& path) {
  std::string error;
  auto source = reader::open_growing_file_source(path, growth_, &error);
  if (source == nullptr) return;
  auto result = analyzer::analyze_trace(std::move(source), path, {}, {}, analyzer::Detail::Verdict);
  // Damage may be a read that raced the writer on an odd file system: the
  // analysis after the program reads the finished file instead.
  if (result.analysis == nullptr || growth_->abandoned() || result.analysis->reader().has_corruption()) return;
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || st.st_dev != device_ || st.st_ino != inode_) return;
  Followed f{result.analysis->reader().info().size, {}, {}};
  headline_of(*result.analysis, &f.headline, &f.process);
  followed_ = std::move(f);
}

void TraceFollower::finish() {
  if (!thread_.joinable()) return;
  growth_->end();
  bool raised = true;
  {
    const std::lock_guard lock(mutex_);
    finishing_ = true;
    const sched_param normal{};
    const int rc = idle_ ? pthread_setschedparam(thread_.native_handle(), SCHED_OTHER, &normal) : 0;
    raised = rc == 0 || rc == ESRCH;  // ESRCH: the thread has already ended
  }
  if (!raised) growth_->abandon();  // make() checked that it may be: not expected
  thread_.join();
}

bool TraceFollower::headline(const std::string& path, TraceHeadline* out, analyzer::ProcessEntry* process) const {
  if (!followed_) return false;
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || st.st_dev != device_ || st.st_ino != inode_ ||
      static_cast<uint64_t>(st.st_size) != followed_->size)
    return false;
  *out = followed_->headline;
  if (process != nullptr) {
    *process = followed_->process;
    process->trace_path = path;  // as the caller names it: /proc/PID/fd gave the resolved path
  }
  return true;
}

}  // namespace gpuscope::cli
