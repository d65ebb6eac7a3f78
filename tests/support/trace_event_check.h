// Checks a Chrome trace-event JSON document the way a strict consumer
// would: it parses (nlohmann::json is strict: bad escapes, invalid UTF-8
// and trailing commas all throw), every event has the fields its phase
// requires, and complete ("X") events nest on every (pid, tid) track.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuscope::test {

struct TraceEventCheck {
  nlohmann::json doc;
  std::vector<std::string> errors;  // empty: valid
  std::map<std::string, uint64_t> by_phase;
  bool ok() const { return errors.empty(); }
  std::string first_errors() const {
    std::string s;
    for (size_t i = 0; i < errors.size() && i < 5; ++i) s += errors[i] + "\n";
    return s;
  }
};

// Microsecond timestamps with three decimals back to integer nanoseconds.
inline int64_t to_ns(const nlohmann::json& v) { return std::llround(v.get<double>() * 1000.0); }

inline void check_event_fields(const nlohmann::json& e, size_t i, TraceEventCheck* out) {
  const auto fail = [&](const std::string& what) { out->errors.push_back("event " + std::to_string(i) + ": " + what + ": " + e.dump()); };
  if (!e.is_object()) return fail("not an object");
  if (!e.contains("ph") || !e["ph"].is_string()) return fail("no ph");
  const std::string ph = e["ph"];
  ++out->by_phase[ph];
  if (!e.contains("name") || !e["name"].is_string()) fail("no name");
  if (!e.contains("ts") || !e["ts"].is_number()) fail("no ts");
  if (!e.contains("pid") || !e["pid"].is_number_integer()) fail("no pid");
  if (!e.contains("tid") || !e["tid"].is_number_integer()) fail("no tid");
  if (ph == "X" && (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0)) fail("X without dur");
  if ((ph == "b" || ph == "e" || ph == "s" || ph == "f" || ph == "t") && !e.contains("id")) fail("no id");
  if ((ph == "b" || ph == "e" || ph == "s" || ph == "f") && !e.contains("cat")) fail("no cat");
  if (ph == "C" && (!e.contains("args") || !e["args"].is_object() || e["args"].empty())) fail("C without args");
  if (ph == "M" && (!e.contains("args") || !e["args"].contains("name"))) fail("M without args.name");
  static const std::string kPhases = "XBEbeisftCMn";
  if (ph.size() != 1 || kPhases.find(ph[0]) == std::string::npos) fail("unknown phase");
}

// X events per track: sorted by start (longer first on ties), each must end
// by the end of the innermost span still open when it starts.
inline void check_nesting(const nlohmann::json& events, TraceEventCheck* out) {
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> tracks;
  for (const auto& e : events)
    if (e.is_object() && e.value("ph", "") == "X" && e.contains("dur") && e.contains("ts"))
      tracks[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].emplace_back(to_ns(e["ts"]),
                                                                              to_ns(e["ts"]) + to_ns(e["dur"]));
  for (auto& [track, spans] : tracks) {
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<int64_t> open;  // ends of the enclosing spans
    for (const auto& [start, end] : spans) {
      while (!open.empty() && open.back() <= start) open.pop_back();
      if (!open.empty() && end > open.back()) {
        out->errors.push_back("partial overlap on pid " + std::to_string(track.first) + " tid " +
                              std::to_string(track.second) + ": [" + std::to_string(start) + ", " +
                              std::to_string(end) + ") ends after its parent at " + std::to_string(open.back()));
        continue;
      }
      open.push_back(end);
    }
  }
}

// Async begin/end balanced per (cat, id, name).
inline void check_async(const nlohmann::json& events, TraceEventCheck* out) {
  std::map<std::string, int64_t> depth;
  for (const auto& e : events) {
    const std::string ph = e.value("ph", "");
    if (ph != "b" && ph != "e") continue;
    const std::string key = e.value("cat", "") + "/" + e["id"].dump() + "/" + e.value("name", "");
    depth[key] += ph == "b" ? 1 : -1;
  }
  for (const auto& [key, d] : depth)
    if (d != 0) out->errors.push_back("async begin/end unbalanced: " + key);
}

inline TraceEventCheck check_trace_events(const std::string& text) {
  TraceEventCheck out;
  try {
    out.doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    out.errors.push_back(std::string("not strict JSON: ") + e.what());
    return out;
  }
  if (!out.doc.is_object() || !out.doc.contains("traceEvents") || !out.doc["traceEvents"].is_array()) {
    out.errors.push_back("no traceEvents array");
    return out;
  }
  const auto& events = out.doc["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) check_event_fields(events[i], i, &out);
  if (!out.errors.empty()) return out;
  // Perfetto takes a tid under a second pid for a new thread: one pid per tid.
  std::map<int64_t, int64_t> pid_of_tid;
  for (const auto& e : events) {
    const auto [it, fresh] = pid_of_tid.try_emplace(e["tid"].get<int64_t>(), e["pid"].get<int64_t>());
    if (!fresh && it->second != e["pid"].get<int64_t>())
      out.errors.push_back("tid " + std::to_string(it->first) + " under two pids: " + e.dump());
  }
  check_nesting(events, &out);
  check_async(events, &out);
  return out;
}

}  // namespace gpuscope::test
