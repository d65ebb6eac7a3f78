#include "output_names.h"

#include "utc_time.h"

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

namespace gpuscope::protocol {
namespace {

constexpr std::string_view kDefaultPattern = "gpuscope-%n-%p.gpuscope";
// torchrun/mpirun workers: the rank in the name says which file is which.
constexpr std::string_view kDefaultRankPattern = "gpuscope-%n-rank%r-%p.gpuscope";

bool is_directory(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string with_pid_suffix(const std::string& path, int pid) { return with_suffix(path, "-" + std::to_string(pid)); }

// `path` if it is not taken, else `path` with `infix`2, `infix`3, ...
// before its extension: the first candidate not taken. Names are probed
// one after the other, so the bound only stops a directory stuffed with
// names; past it the last candidate is returned.
template <class Taken>
std::string first_free_name(const std::string& path, std::string_view infix, Taken taken) {
  constexpr int kMaxCandidates = 10'000;
  std::string candidate = path;
  for (int n = 2; n <= kMaxCandidates && taken(candidate); ++n)
    candidate = with_suffix(path, std::string(infix) + std::to_string(n));
  return candidate;
}

}  // namespace

std::string with_suffix(const std::string& path, std::string_view suffix) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return has_ext ? path.substr(0, dot) + std::string(suffix) + path.substr(dot) : path + std::string(suffix);
}

std::string expand_name_pattern(std::string_view pattern, const NameFields& f) {
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
      case 't': out += container::utc_time(f.start_realtime_ns, container::UtcStyle::Compact); break;
      case 'r': out += f.rank >= 0 ? std::to_string(f.rank) : std::string("norank"); break;
      case '%': out += '%'; break;
      default: out += '%'; out += pattern[i]; break;  // unknown: keep as written
    }
  }
  return out;
}

std::string default_trace_name(const NameFields& f) {
  return expand_name_pattern(f.rank >= 0 ? kDefaultRankPattern : kDefaultPattern, f);
}

OutputForm output_form(const std::string& output) {
  if (output.empty()) return OutputForm::Default;
  if (output.back() == '/' || is_directory(output)) return OutputForm::Directory;
  return output.find('%') != std::string::npos ? OutputForm::Pattern : OutputForm::File;
}

std::string resolve_output_path(const std::string& output, int root_pid, const NameFields& f) {
  const OutputForm form = output_form(output);
  if (form == OutputForm::Default) return default_trace_name(f);
  if (form == OutputForm::Directory) return (output.back() == '/' ? output : output + "/") + default_trace_name(f);
  const std::string path = form == OutputForm::Pattern ? expand_name_pattern(output, f) : output;
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

std::string exec_successor_path(const std::string& path) {
  // Images of one process run one after the other: probing cannot race
  // with a sibling.
  return first_free_name(path, "-exec", [](const std::string& candidate) {
    struct stat st{};
    return lstat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid();
  });
}

std::string attach_trace_path(const std::string& dir, const std::string& exe, int pid) {
  NameFields fields;
  fields.pid = pid;
  fields.exe = exe;
  const std::string first = (dir.ends_with('/') ? dir : dir + "/") + default_trace_name(fields);
  const auto taken = [](const std::string& candidate) {
    struct stat st{};
    return lstat(candidate.c_str(), &st) == 0;
  };
  const std::string path = first_free_name(first, "-", taken);
  return taken(path) ? std::string() : path;
}

}  // namespace gpuscope::protocol
