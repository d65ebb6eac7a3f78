#include "process_info.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <string_view>

#include "clock.h"
#include "environment.h"
#include "gpuscope_version.h"
#include "small_file.h"

extern char** environ;

namespace gpuscope::capture {
namespace {

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

std::vector<std::string> read_cmdline() {
  std::vector<std::string> args;
  const std::string raw = protocol::read_small_file("/proc/self/cmdline");
  size_t begin = 0;
  while (begin < raw.size()) {
    size_t end = raw.find('\0', begin);
    if (end == std::string::npos) end = raw.size();
    args.emplace_back(raw, begin, end - begin);
    begin = end + 1;
  }
  return args;
}

std::string read_link(const char* path) {
  std::array<char, 4096> buf{};
  const ssize_t n = readlink(path, buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : std::string();
}

std::vector<uint16_t> cpu_affinity() {
  std::vector<uint16_t> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(static_cast<uint16_t>(cpu));
  return cpus;
}

std::vector<std::pair<std::string, std::string>> recorded_environment() {
  std::vector<std::pair<std::string, std::string>> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    if (is_recorded_environment_variable(entry.substr(0, eq)))
      vars.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return vars;
}

// The first of `names` set to a non-negative number, or -1.
int first_number(EnvLookup lookup, std::initializer_list<const char*> names, const char** found = nullptr) {
  for (const char* name : names) {
    const char* v = lookup(name);
    if (v == nullptr || *v == '\0') continue;
    int parsed = -1;
    const std::string_view s(v);
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), parsed);
    if (ec != std::errc() || end != s.data() + s.size() || parsed < 0) continue;
    if (found != nullptr) *found = name;
    return parsed;
  }
  return -1;
}

}  // namespace

RankInfo rank_from_environment(EnvLookup lookup) {
  RankInfo r;
  const char* source = nullptr;
  r.rank = first_number(lookup, {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK",
                                 "SLURM_PROCID"}, &source);
  if (source != nullptr) r.source = source;
  r.local_rank = first_number(lookup, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"});
  r.world_size = first_number(lookup, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                                       "SLURM_NTASKS"});
  return r;
}

bool is_recorded_environment_variable(std::string_view name) {
  static constexpr std::string_view kExact[] = {
      "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
      "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
      "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
      "CUDA_MPS_PIPE_DIRECTORY", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTORCH_CUDA_ALLOC_CONF",
      "PYTORCH_NO_CUDA_MEMORY_CACHING", "TF_FORCE_GPU_ALLOW_GROWTH",
      "XLA_PYTHON_CLIENT_PREALLOCATE", "OMP_NUM_THREADS", "RANK", "LOCAL_RANK", "WORLD_SIZE",
      "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "SIMGPU_NODE", "LOCAL_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
      "MPI_LOCALRANKID", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_SIZE",
      "SLURM_LOCALID", "SLURM_NTASKS"};
  for (std::string_view e : kExact)
    if (name == e) return true;
  return name.starts_with(protocol::env::kPrefix);
}

std::string executable_name() {
  const std::string exe = read_link("/proc/self/exe");
  const size_t slash = exe.rfind('/');
  std::string name = slash == std::string::npos ? exe : exe.substr(slash + 1);
  return name.empty() ? std::string("unknown") : name;
}

ProcessMetadata collect_process_metadata() {
  ProcessMetadata m;
  m.pid = getpid();
  m.ppid = getppid();
  m.uid = getuid();
  m.exe = read_link("/proc/self/exe");
  m.argv = read_cmdline();
  m.start_monotonic_ns = monotonic_ns();
  m.start_realtime_ns = realtime_ns();
  utsname u{};
  if (uname(&u) == 0) {
    m.hostname = u.nodename;
    m.kernel_release = u.release;
  }
  m.boot_id = trim_newline(protocol::read_small_file("/proc/sys/kernel/random/boot_id"));
  m.cpu_affinity = cpu_affinity();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  m.online_cpus = online > 0 ? static_cast<uint32_t>(online) : 0;
  m.environment = recorded_environment();
  for (const auto& [key, value] : m.environment) {
    if (key == protocol::env::kRunId) m.run_id = value;
    if (key == protocol::env::kParentPid) m.trace_parent_pid = std::max(0, std::atoi(value.c_str()));
  }
  const RankInfo rank = rank_from_environment([](const char* name) -> const char* { return std::getenv(name); });
  m.rank = rank.rank;
  m.local_rank = rank.local_rank;
  m.world_size = rank.world_size;
  m.rank_source = rank.source;
  m.gpuscope_version = GPUSCOPE_VERSION_STRING;
  return m;
}

std::string own_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_library_path), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::string own_directory() {
  const std::string file = own_library_path();
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? "" : file.substr(0, slash);
}

}  // namespace gpuscope::capture
