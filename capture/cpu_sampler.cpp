#include "cpu_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

namespace gpuscope::capture {
namespace {

constexpr uint64_t kNameRefreshEvery = 100;  // samples; names rarely change

// The per-thread CPU clock of any thread of this process, from its tid
// (the kernel's CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED encoding, stable ABI).
clockid_t thread_cpu_clock(uint32_t tid) {
  return static_cast<clockid_t>((~static_cast<clockid_t>(tid) << 3) | 6);
}

std::string read_thread_name(uint32_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[64];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  std::string name(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

uint64_t timeval_ns(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(tv.tv_usec) * 1000ull;
}

}  // namespace

void CpuSampler::sample_thread(uint32_t tid, uint64_t now_ns, bool refresh_name, ChunkBuilder& out) {
  timespec ts{};
  if (clock_gettime(thread_cpu_clock(tid), &ts) != 0) return;  // thread just exited
  const uint64_t cpu = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  out.add(fb::CpuSample(now_ns, cpu, 0, tid, 0));
  auto [it, is_new] = threads_.try_emplace(tid);
  it->second.last_seen = samples_taken_;
  if (!is_new && !refresh_name) return;
  std::string name = read_thread_name(tid);
  if (!is_new && it->second.name == name) return;
  const uint32_t name_id = strings_.intern(name);
  out.add(fb::Marker(now_ns, 0, 0, name_id, 0, tid, fb::MarkerKind::ThreadName, 0, 0));
  it->second.name = std::move(name);
}

void CpuSampler::sample(uint64_t now_ns, ChunkBuilder& out) {
  const bool refresh_names = ++samples_taken_ % kNameRefreshEvery == 1;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      sample_thread(static_cast<uint32_t>(std::strtoul(e->d_name, nullptr, 10)), now_ns,
                    refresh_names, out);
    }
    closedir(dir);
  }
  std::erase_if(threads_, [&](const auto& t) { return t.second.last_seen != samples_taken_; });
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    const uint64_t sys = timeval_ns(usage.ru_stime);
    out.add(fb::CpuSample(now_ns, timeval_ns(usage.ru_utime) + sys, sys, 0, 0));
  }
}

}  // namespace gpuscope::capture
