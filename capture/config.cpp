#include "config.h"

#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "environment.h"
#include "settings.h"

namespace gpuscope::capture {
namespace {

namespace env = protocol::env;
using protocol::Setting;

// A bad value of a variable read_capture_config() reads is reported as it is
// read, naming the default it keeps; the others (read elsewhere in the
// library) are checked against the same table (protocol/settings.h), its
// `instead` saying what a bad value leaves in place.

// "NAME=VALUE: expected WHAT; INSTEAD".
std::string problem(const Setting& s, std::string_view value, std::string_view instead) {
  return std::string(s.name) + "=" + std::string(value) + ": expected " + protocol::expectation(s) + "; " +
         std::string(instead);
}

// "; did you mean GPUSCOPE_STACKS?" for a name at most two edits from one.
std::string closest_hint(std::string_view name) {
  const Setting* best = protocol::closest_setting(name);
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
    const Setting& s = *protocol::find_setting(name);
    if (protocol::parse_number(v, s.min, s.max, &parsed)) *out = static_cast<T>(parsed);
    else problems_->push_back(problem(s, v, "using the default, " + std::to_string(*out)));
  }
  void flag(std::string_view name, bool* out) {
    const char* v = take(name);
    if (v != nullptr && !protocol::parse_flag(v, out))
      problems_->push_back(
          problem(*protocol::find_setting(name), v, *out ? "using the default, on" : "using the default, off"));
  }
  // The value when it is one of the choices, else "" (the default).
  std::string choice(std::string_view name) {
    const char* v = take(name);
    if (v == nullptr) return {};
    const Setting& s = *protocol::find_setting(name);
    if (protocol::is_choice(s, v)) return v;
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
      if (!entry.starts_with(env::kPrefix) || eq == std::string_view::npos) continue;
      const std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
      if (std::find(read_.begin(), read_.end(), name) != read_.end()) continue;
      const Setting* s = protocol::find_setting(name);
      if (s == nullptr)
        problems_->push_back(std::string(name) + ": not a gpuscope setting, ignored" + closest_hint(name));
      else if (!value.empty() && !protocol::acceptable(*s, value))
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

CaptureConfig read_capture_config() {
  CaptureConfig c;
  if (getauxval(AT_SECURE) != 0) {
    c.secure_execution = true;
    c.disabled = true;
    return c;
  }
  Reader r(&c.problems);
  r.flag(env::kDisable, &c.disabled);
  c.output = r.text(env::kOutput);
  c.run_notes = r.text(env::kRunNotes);
  c.mode = r.choice(env::kMode);
  r.number(env::kRootPid, &c.root_pid);
  SessionOptions& o = c.options;
  r.number(env::kBufferKb, &o.ring_kb);
  r.number(env::kMaxThreads, &o.max_threads);
  r.number(env::kFlushMs, &o.flush_interval_ms);
  r.number(env::kCpuSampleMs, &o.cpu_sample_interval_ms);
  r.number(env::kZstdLevel, &o.zstd_level);
  r.number(env::kExitTimeoutMs, &o.exit_timeout_ms);
  o.drain_interval_ms = std::min(o.drain_interval_ms, o.flush_interval_ms);
  r.flag(env::kStacks, &c.stacks);
  r.flag(env::kPythonStacks, &c.python_stacks);
  r.number(env::kStackDepth, &c.stack_depth);
  c.fast_unwinder = r.choice(env::kUnwinder) != env::kUnwinderLibunwind;
  r.number(env::kNvmlHz, &c.nvml_hz);
  r.number(env::kCpuSampling, &c.cpu_sampling_hz);
  r.number(env::kCpuSamplingDelayMs, &c.cpu_sampling_delay_ms);
  r.check_the_rest();
  return c;
}

}  // namespace gpuscope::capture
