// What part of a trace a command looks at: --window FROM:TO in seconds
// from the process start, and spans (NVTX ranges, profiler steps) cut to
// the capture windows (trace_model.h).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "trace_model.h"

namespace gpuscope::analyzer {

bool parse_window(const std::string& text, TimeWindow* out) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos) return false;
  const auto number = [](const std::string& s, double* v) {
    if (s.empty()) return true;
    char* end = nullptr;
    *v = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && *v >= 0;
  };
  TimeWindow w;
  if (!number(text.substr(0, colon), &w.start_s) || !number(text.substr(colon + 1), &w.end_s)) return false;
  if (colon + 1 == text.size()) w.end_s = -1;
  if (w.end_s >= 0 && w.end_s <= w.start_s) return false;
  *out = w;
  return true;
}

std::vector<std::pair<uint64_t, uint64_t>> intersect_spans(const std::vector<std::pair<uint64_t, uint64_t>>& spans,
                                                           const std::vector<std::pair<uint64_t, uint64_t>>& windows) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  size_t j = 0;
  for (const auto& [a, b] : spans) {
    while (j < windows.size() && windows[j].second <= a) ++j;
    for (size_t k = j; k < windows.size() && windows[k].first < b; ++k) {
      const uint64_t from = std::max(a, windows[k].first), to = std::min(b, windows[k].second);
      if (to > from) out.emplace_back(from, to);
    }
  }
  return out;
}

}  // namespace gpuscope::analyzer
