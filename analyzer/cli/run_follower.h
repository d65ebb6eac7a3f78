// gpuscope run's verdict without a wait at the end: the root process's
// trace is read and modelled while the program writes it, on a thread that
// runs only when a CPU would otherwise be idle (SCHED_IDLE), so the program
// loses no CPU time to it. When the program ends, only the last frames and
// the rules are left. Whatever keeps it from following (a trace not found
// among the program's open files, damage, no right to raise the thread's
// priority again) leaves the trace to be analyzed after the program, as
// without it; the line printed is the same.
//
// The trace is found in /proc/PID/fd, not with inotify: closing an inotify
// instance that had a watch waits for a kernel grace period, 0 to 17 ms
// here, and the run's end would wait for it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <string>
#include <thread>

#include "commands.h"

namespace gpuscope::cli {

class RunGrowth;

class TraceFollower {
 public:
  // A follower for the traces of run `run_id` in `directory`; null when
  // GPUSCOPE_RUN_FOLLOW=off, when the CLI could not raise the thread out of
  // SCHED_IDLE again (no CAP_SYS_NICE, RLIMIT_NICE below 20) or it cannot
  // be set up. Made before the fork: no thread runs when the program is
  // started.
  static std::unique_ptr<TraceFollower> make(const std::filesystem::path& directory, std::string run_id);
  ~TraceFollower();
  TraceFollower(const TraceFollower&) = delete;
  TraceFollower& operator=(const TraceFollower&) = delete;

  // Follows the trace process `pid` writes (the program started).
  void follow(pid_t pid);
  // The program has ended: the trace is final. Raises the thread to normal
  // priority and waits for the analysis.
  void finish();
  // The followed trace's headline, when `path` names that file and it has
  // not changed since it was read.
  bool headline(const std::string& path, TraceHeadline* out, analyzer::ProcessEntry* process) const;

 private:
  struct Followed {
    uint64_t size = 0;  // what was read: the file's size when the program had ended
    TraceHeadline headline;
    analyzer::ProcessEntry process;
  };

  TraceFollower(const struct stat& directory, std::string run_id, std::shared_ptr<RunGrowth> growth);
  void run(pid_t pid);
  std::string find_trace(pid_t pid);
  std::string trace_among_open_files(pid_t pid);
  void analyze(const std::string& path);

  dev_t directory_device_;  // the output directory's
  ino_t directory_inode_;
  std::string run_id_;
  std::shared_ptr<RunGrowth> growth_;
  std::thread thread_;
  // Written by the thread, read once it is joined.
  std::optional<Followed> followed_;
  dev_t device_ = 0;  // the followed file's, when it was found
  ino_t inode_ = 0;
  std::set<std::pair<dev_t, ino_t>> looked_at_;  // files of the program found not to be the trace
  std::mutex mutex_;  // the thread's priority
  bool idle_ = false;       // the thread runs as SCHED_IDLE
  bool finishing_ = false;  // finish() has begun: the thread stays at normal priority
};

}  // namespace gpuscope::cli
