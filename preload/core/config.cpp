#include "config.h"

#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <ctime>
#include <string_view>

namespace gpuscope::capture {
namespace {

constexpr const char* kDefaultPattern = "gpuscope-%n-%p.gpuscope";
// torchrun/mpirun workers: the rank in the name says which file is which.
constexpr const char* kDefaultRankPattern = "gpuscope-%n-rank%r-%p.gpuscope";

template <class T> void read_number(const char* name, T* out, T min, T max) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return;
  T parsed{};
  const std::string_view s(v);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), parsed);
  if (ec == std::errc() && end == s.data() + s.size() && parsed >= min && parsed <= max) *out = parsed;
}

bool is_directory(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string utc_timestamp(uint64_t realtime_ns) {
  const time_t secs = static_cast<time_t>(realtime_ns / 1'000'000'000ull);
  tm parts{};
  gmtime_r(&secs, &parts);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &parts);
  return buf;
}

// "dir/app.gpuscope" -> "dir/app<suffix>.gpuscope"; "dir/trace" -> "dir/trace<suffix>".
std::string with_suffix(const std::string& path, const std::string& suffix) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return has_ext ? path.substr(0, dot) + suffix + path.substr(dot) : path + suffix;
}

std::string with_pid_suffix(const std::string& path, int pid) {
  return with_suffix(path, "-" + std::to_string(pid));
}

}  // namespace

CaptureConfig read_capture_config() {
  CaptureConfig c;
  if (getauxval(AT_SECURE) != 0) {
    c.secure_execution = true;
    c.disabled = true;
    return c;
  }
  const char* disable = std::getenv("GPUSCOPE_DISABLE");
  c.disabled = disable != nullptr && std::string_view(disable) == "1";
  if (const char* out = std::getenv("GPUSCOPE_OUTPUT")) c.output = out;
  if (const char* notes = std::getenv("GPUSCOPE_RUN_NOTES")) c.run_notes = notes;
  if (const char* mode = std::getenv("GPUSCOPE_MODE")) c.mode = mode;
  read_number("GPUSCOPE_ROOT_PID", &c.root_pid, 0, 1 << 30);
  SessionOptions& o = c.options;
  read_number<uint32_t>("GPUSCOPE_BUFFER_KB", &o.ring_kb, 4, 1 << 20);
  read_number<uint32_t>("GPUSCOPE_MAX_THREADS", &o.max_threads, 1, 1 << 16);
  read_number<uint32_t>("GPUSCOPE_FLUSH_MS", &o.flush_interval_ms, 1, 60'000);
  read_number<uint32_t>("GPUSCOPE_CPU_SAMPLE_MS", &o.cpu_sample_interval_ms, 0, 60'000);
  read_number("GPUSCOPE_ZSTD_LEVEL", &o.zstd_level, -7, 19);
  read_number<uint32_t>("GPUSCOPE_EXIT_TIMEOUT_MS", &o.exit_timeout_ms, 0, 600'000);
  o.drain_interval_ms = std::min(o.drain_interval_ms, o.flush_interval_ms);
  const char* stacks = std::getenv("GPUSCOPE_STACKS");
  c.stacks = stacks == nullptr || std::string_view(stacks) != "0";
  read_number<uint32_t>("GPUSCOPE_STACK_DEPTH", &c.stack_depth, 1, 64);
  const char* unwinder = std::getenv("GPUSCOPE_UNWINDER");
  c.fast_unwinder = unwinder == nullptr || std::string_view(unwinder) != "libunwind";
  read_number<uint32_t>("GPUSCOPE_NVML_HZ", &c.nvml_hz, 0, 1000);
  return c;
}

std::string exec_successor_path(const std::string& path) {
  // Images of one process run one after the other: probing cannot race
  // with a sibling. The bound only stops a directory stuffed with names.
  constexpr int kMaxImages = 10'000;
  std::string candidate = path;
  for (int image = 2; image <= kMaxImages; ++image) {
    struct stat st{};
    if (lstat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) return candidate;
    candidate = with_suffix(path, "-exec" + std::to_string(image));
  }
  return candidate;
}

std::string expand_name_pattern(const std::string& pattern, const NameFields& f) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (pattern[++i]) {
      case 'p': out += std::to_string(f.pid); break;
      case 'h': out += f.host; break;
      case 'n': out += f.exe; break;
      case 't': out += utc_timestamp(f.start_realtime_ns); break;
      case 'r': out += f.rank >= 0 ? std::to_string(f.rank) : std::string("norank"); break;
      case '%': out += '%'; break;
      default: out += '%'; out += pattern[i]; break;  // unknown: keep as written
    }
  }
  return out;
}

std::string resolve_output_path(const std::string& output, int root_pid, const NameFields& f) {
  const char* default_pattern = f.rank >= 0 ? kDefaultRankPattern : kDefaultPattern;
  if (output.empty()) return expand_name_pattern(default_pattern, f);
  if (output.back() == '/' || is_directory(output)) {
    const std::string dir = output.back() == '/' ? output : output + "/";
    return dir + expand_name_pattern(default_pattern, f);
  }
  const std::string path =
      output.find('%') != std::string::npos ? expand_name_pattern(output, f) : output;
  if (output.find("%p") != std::string::npos) return path;
  // Per rank: a worker's helper inherits the worker's rank and finds the
  // worker's file there (O_EXCL would refuse it); it adds its pid instead.
  struct stat st{};
  if (output.find("%r") != std::string::npos && f.rank >= 0)
    return lstat(path.c_str(), &st) == 0 ? with_pid_suffix(path, f.pid) : path;
  // Without %p, every process of a run would aim at one file: the root keeps
  // the name, the others add their pid.
  const bool other_process = root_pid != 0 && root_pid != f.pid;
  return other_process ? with_pid_suffix(path, f.pid) : path;
}

}  // namespace gpuscope::capture
