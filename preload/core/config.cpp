#include "config.h"

#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <string_view>

#include "capture_window.h"

namespace gpuscope::capture {
namespace {

constexpr const char* kDefaultPattern = "gpuscope-%n-%p.gpuscope";
// torchrun/mpirun workers: the rank in the name says which file is which.
constexpr const char* kDefaultRankPattern = "gpuscope-%n-rank%r-%p.gpuscope";

// Every GPUSCOPE_* variable, with what it accepts. A bad value of a variable
// read_capture_config() reads is reported as it is read, naming the default
// it keeps; the others (read elsewhere in the library) are checked against
// the same table, `instead` saying what a bad value leaves in place.
enum class Kind : uint8_t {
  Flag,     // parse_flag
  Number,   // a whole number from `min` to `max`
  Choice,   // one of `accepted`, '|'-separated
  Path,     // an absolute path
  Text,     // anything
  Check,    // `valid` decides; `accepted` says what it takes
  Outside,  // read by the CLI, the scripts or the tests, never by the library
};

struct Setting {
  std::string_view name;
  Kind kind;
  int64_t min = 0, max = 0;
  std::string_view accepted = {};
  std::string_view instead = {};  // for choices and variables read elsewhere
  bool (*valid)(std::string_view) = nullptr;
};

constexpr std::string_view kWholeRun = "capturing the whole run, without capture windows";
constexpr int64_t kMaxPid = 1 << 30;

constexpr Setting kSettings[] = {
    {"GPUSCOPE_OUTPUT", Kind::Text},
    {"GPUSCOPE_ROOT_PID", Kind::Number, 0, kMaxPid},
    {"GPUSCOPE_PARENT_PID", Kind::Number, 0, kMaxPid, {}, "recording no traced parent"},
    {"GPUSCOPE_RUN_ID", Kind::Text},
    {"GPUSCOPE_DISABLE", Kind::Flag},
    {"GPUSCOPE_MODE", Kind::Choice, 0, 0, "standby", "tracing the whole run"},
    {"GPUSCOPE_CONTROL_DIR", Kind::Path, 0, 0, {}, "using the default control directory"},
    {"GPUSCOPE_BUFFER_KB", Kind::Number, 4, 1 << 20},
    {"GPUSCOPE_MAX_THREADS", Kind::Number, 1, 1 << 16},
    {"GPUSCOPE_FLUSH_MS", Kind::Number, 1, 60'000},
    {"GPUSCOPE_CPU_SAMPLE_MS", Kind::Number, 0, 60'000},
    {"GPUSCOPE_ZSTD_LEVEL", Kind::Number, -7, 19},
    {"GPUSCOPE_EXIT_TIMEOUT_MS", Kind::Number, 0, 600'000},
    {"GPUSCOPE_STACKS", Kind::Flag},
    {"GPUSCOPE_STACK_DEPTH", Kind::Number, 1, 64},
    {"GPUSCOPE_UNWINDER", Kind::Choice, 0, 0, "libunwind", "using gpuscope's own unwinder (libunwind as fallback)"},
    {"GPUSCOPE_NVML_HZ", Kind::Number, 0, 1000},
    {"GPUSCOPE_CLOCK", Kind::Choice, 0, 0, "monotonic|tsc", "using the TSC where it is usable"},
    {"GPUSCOPE_DELAY_MS", Kind::Number, 0, kMaxWindowMs, {}, kWholeRun},
    {"GPUSCOPE_DURATION_MS", Kind::Number, 0, kMaxWindowMs, {}, kWholeRun},
    {"GPUSCOPE_CAPTURE_RANGE", Kind::Check, 0, 0, "cudaProfilerApi or nvtx:MESSAGE[@DOMAIN]", kWholeRun,
     [](std::string_view v) {
       WindowConfig c;
       return parse_capture_range(v, &c);
     }},
    {"GPUSCOPE_CAPTURE_RANGE_END", Kind::Check, 0, 0, "stop, repeat or repeat:N (N > 0)", kWholeRun,
     [](std::string_view v) {
       uint32_t n = 0;
       return parse_range_end(v, &n);
     }},
    {"GPUSCOPE_CUPTI_PATH", Kind::Text},
    {"GPUSCOPE_LIBRARY", Kind::Outside},        // the CLI: which libgpuscope.so to preload
    {"GPUSCOPE_JOBS", Kind::Outside},           // scripts/: build parallelism
    {"GPUSCOPE_UPDATE_GOLDEN", Kind::Outside},  // tests: rewrite golden files
    {"GPUSCOPE_FLIP_COUNT", Kind::Outside},     // tests: bit flips per damage test
    {"GPUSCOPE_TEST_BROKEN_LIBUNWIND", Kind::Outside},  // tests: the libunwind fallback's child
};

constexpr std::string_view kPrefix = "GPUSCOPE_";

const Setting* find_setting(std::string_view name) {
  for (const Setting& s : kSettings)
    if (s.name == name) return &s;
  return nullptr;
}

bool parse_number(std::string_view text, int64_t min, int64_t max, int64_t* out) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) return false;
  *out = v;
  return true;
}

bool is_choice(const Setting& s, std::string_view text) {
  for (std::string_view rest = s.accepted; !rest.empty();) {
    const size_t bar = rest.find('|');
    if (rest.substr(0, bar) == text) return true;
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  return false;
}

bool acceptable(const Setting& s, std::string_view text) {
  int64_t number = 0;
  bool flag = false;
  switch (s.kind) {
    case Kind::Flag: return parse_flag(text, &flag);
    case Kind::Number: return parse_number(text, s.min, s.max, &number);
    case Kind::Choice: return is_choice(s, text);
    case Kind::Path: return text.starts_with('/');
    case Kind::Check: return s.valid(text);
    case Kind::Text:
    case Kind::Outside: return true;
  }
  return false;
}

// What the setting takes, for a message: "expected ...".
std::string expectation(const Setting& s) {
  std::string choices;
  for (const char c : s.accepted) choices += c == '|' ? std::string(" or ") : std::string(1, c);
  switch (s.kind) {
    case Kind::Flag: return "1, yes, true or on; 0, no, false or off";
    case Kind::Number: return "a whole number from " + std::to_string(s.min) + " to " + std::to_string(s.max);
    case Kind::Choice: return choices;
    case Kind::Path: return "an absolute path";
    default: return std::string(s.accepted);
  }
}

// "NAME=VALUE: expected WHAT; INSTEAD".
std::string problem(const Setting& s, std::string_view value, std::string_view instead) {
  return std::string(s.name) + "=" + std::string(value) + ": expected " + expectation(s) + "; " + std::string(instead);
}


size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "; did you mean GPUSCOPE_STACKS?" for a name at most two edits from one.
std::string closest_hint(std::string_view name) {
  const Setting* best = nullptr;
  size_t best_distance = 3;
  for (const Setting& s : kSettings)
    if (const size_t d = edit_distance(name, s.name); d < best_distance) {
      best = &s;
      best_distance = d;
    }
  return best != nullptr ? "; did you mean " + std::string(best->name) + "?" : std::string();
}

// Reads the variables of read_capture_config(): a bad value leaves *out
// (the default) alone and says so. Then checks the rest of the environment.
class Reader {
 public:
  explicit Reader(std::vector<std::string>* problems) : problems_(problems) {}

  template <class T> void number(std::string_view name, T* out) {
    const char* v = take(name);
    int64_t parsed = 0;
    if (v == nullptr) return;
    const Setting& s = *find_setting(name);
    if (parse_number(v, s.min, s.max, &parsed)) *out = static_cast<T>(parsed);
    else problems_->push_back(problem(s, v, "using the default, " + std::to_string(*out)));
  }
  void flag(std::string_view name, bool* out) {
    const char* v = take(name);
    if (v != nullptr && !parse_flag(v, out))
      problems_->push_back(problem(*find_setting(name), v, *out ? "using the default, on" : "using the default, off"));
  }
  // The value when it is one of the choices, else "" (the default).
  std::string choice(std::string_view name) {
    const char* v = take(name);
    if (v == nullptr) return {};
    const Setting& s = *find_setting(name);
    if (is_choice(s, v)) return v;
    problems_->push_back(problem(s, v, s.instead));
    return {};
  }
  std::string text(std::string_view name) {
    const char* v = take(name);
    return v != nullptr ? v : "";
  }

  // Every other GPUSCOPE_* variable: checked against the table when read
  // elsewhere, reported when the table does not know the name (a typo).
  void check_the_rest() {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const size_t eq = entry.find('=');
      if (!entry.starts_with(kPrefix) || eq == std::string_view::npos) continue;
      const std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
      if (std::find(read_.begin(), read_.end(), name) != read_.end()) continue;
      const Setting* s = find_setting(name);
      if (s == nullptr)
        problems_->push_back(std::string(name) + ": not a gpuscope setting, ignored" + closest_hint(name));
      else if (!value.empty() && !acceptable(*s, value))
        problems_->push_back(problem(*s, value, s->instead.empty() ? "using the default" : s->instead));
    }
  }

 private:
  // The value of a variable the table lists, or null when it is unset or
  // empty (an empty value means the default, as unset does).
  const char* take(std::string_view name) {
    read_.push_back(name);
    const char* v = std::getenv(std::string(name).c_str());
    return v != nullptr && *v != '\0' ? v : nullptr;
  }

  std::vector<std::string>* problems_;
  std::vector<std::string_view> read_;
};

}  // namespace

bool parse_flag(std::string_view text, bool* out) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* yes : {"1", "yes", "true", "on"})
    if (lower == yes) return *out = true;
  for (const char* no : {"0", "no", "false", "off"})
    if (lower == no) return !(*out = false);
  return false;
}

namespace {

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
  Reader r(&c.problems);
  r.flag("GPUSCOPE_DISABLE", &c.disabled);
  c.output = r.text("GPUSCOPE_OUTPUT");
  c.mode = r.choice("GPUSCOPE_MODE");
  r.number("GPUSCOPE_ROOT_PID", &c.root_pid);
  SessionOptions& o = c.options;
  r.number("GPUSCOPE_BUFFER_KB", &o.ring_kb);
  r.number("GPUSCOPE_MAX_THREADS", &o.max_threads);
  r.number("GPUSCOPE_FLUSH_MS", &o.flush_interval_ms);
  r.number("GPUSCOPE_CPU_SAMPLE_MS", &o.cpu_sample_interval_ms);
  r.number("GPUSCOPE_ZSTD_LEVEL", &o.zstd_level);
  r.number("GPUSCOPE_EXIT_TIMEOUT_MS", &o.exit_timeout_ms);
  o.drain_interval_ms = std::min(o.drain_interval_ms, o.flush_interval_ms);
  r.flag("GPUSCOPE_STACKS", &c.stacks);
  r.number("GPUSCOPE_STACK_DEPTH", &c.stack_depth);
  c.fast_unwinder = r.choice("GPUSCOPE_UNWINDER") != "libunwind";
  r.number("GPUSCOPE_NVML_HZ", &c.nvml_hz);
  r.check_the_rest();
  return c;
}

std::string exec_successor_path(const std::string& path, int pid, const std::string& exe) {
  return with_suffix(path, "-" + std::to_string(pid) + "-" + exe);
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
