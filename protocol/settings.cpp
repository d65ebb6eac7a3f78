#include "settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "capture_range.h"
#include "device_sampling.h"
#include "environment.h"

namespace gpuscope::protocol {
namespace {

using Kind = SettingKind;

constexpr std::string_view kWholeRun = "capturing the whole run, without capture windows";
constexpr int64_t kMaxPid = 1 << 30;

constexpr Setting kSettings[] = {
    {env::kOutput, Kind::Text},
    {env::kRootPid, Kind::Number, 0, kMaxPid},
    {env::kParentPid, Kind::Number, 0, kMaxPid, {}, "recording no traced parent"},
    {env::kRunId, Kind::Text},
    {env::kRunNotes, Kind::Text},
    {env::kDisable, Kind::Flag},
    {env::kMode, Kind::Choice, 0, 0, env::kModeStandby, "tracing the whole run"},
    {env::kControlDir, Kind::Path, 0, 0, {}, "using the default control directory"},
    {env::kBufferKb, Kind::Number, 4, 1 << 20},
    {env::kMaxThreads, Kind::Number, 1, 1 << 16},
    {env::kFlushMs, Kind::Number, 1, 60'000},
    {env::kCpuSampleMs, Kind::Number, 0, 60'000},
    {env::kZstdLevel, Kind::Number, -7, 19},
    {env::kExitTimeoutMs, Kind::Number, 0, 600'000},
    {env::kStacks, Kind::Flag},
    {env::kPythonStacks, Kind::Flag},
    {env::kStackDepth, Kind::Number, 1, 64},
    {env::kUnwinder, Kind::Choice, 0, 0, env::kUnwinderLibunwind,
     "using gpuscope's own unwinder (libunwind as fallback)"},
    {env::kNvmlHz, Kind::Number, 0, 1000},
    {env::kCpuSampling, Kind::Number, 0, 10'000},
    {env::kCpuSamplingDelayMs, Kind::Number, 0, 600'000},
    {env::kClock, Kind::Choice, 0, 0, "monotonic|tsc", "using the TSC where it is usable"},
    {env::kDelayMs, Kind::Number, 0, kMaxWindowMs, {}, kWholeRun},
    {env::kDurationMs, Kind::Number, 0, kMaxWindowMs, {}, kWholeRun},
    {env::kCaptureRange, Kind::Check, 0, 0, kCaptureRangeGrammar, kWholeRun, is_capture_range},
    {env::kCaptureRangeEnd, Kind::Check, 0, 0, kRangeEndGrammar, kWholeRun, is_range_end},
    {env::kCuptiPath, Kind::Text},
    {env::kCuptiCallbacks, Kind::Choice, 0, 0, "device-work|all|none",
     "calling back for the calls that queue device work"},
    {env::kCuptiKinds, Kind::Text},
    {env::kDeviceSampling, Kind::Check, 0, 0, kDeviceSamplingGrammar, "tracing device activity all the time",
     is_device_sampling},
    {env::kLibrary, Kind::Outside},
    {env::kProgress, Kind::Outside},
    {env::kRunFollow, Kind::Outside},
    {env::kJobs, Kind::Outside},
    {env::kUpdateGolden, Kind::Outside},
    {env::kFlipCount, Kind::Outside},
    {env::kTestBrokenLibunwind, Kind::Outside},
};

}  // namespace

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

std::span<const Setting> settings() { return kSettings; }

const Setting* find_setting(std::string_view name) {
  for (const Setting& s : kSettings)
    if (s.name == name) return &s;
  return nullptr;
}

const Setting* closest_setting(std::string_view name) {
  const Setting* best = nullptr;
  size_t best_distance = 3;
  for (const Setting& s : kSettings)
    if (const size_t d = edit_distance(name, s.name); d < best_distance) {
      best = &s;
      best_distance = d;
    }
  return best;
}

bool parse_flag(std::string_view text, bool* out) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* yes : {"1", "yes", "true", "on"})
    if (lower == yes) return *out = true;
  for (const char* no : {"0", "no", "false", "off"})
    if (lower == no) return !(*out = false);
  return false;
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

}  // namespace gpuscope::protocol
