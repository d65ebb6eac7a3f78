// What the host was inside while the GPU idled: the feeding thread's ranges
// (NVTX, or an imported trace's annotations, CPU operators and Python
// functions) by the GPU idle time they cover, and GPU busy per profiler
// step. Device timestamps only: without them idle time is not known.
#include <algorithm>
#include <map>

#include "metrics.h"

namespace gpuscope::analyzer {
namespace {

using Span = std::pair<uint64_t, uint64_t>;
constexpr double kWholeRunShare = 0.9;

bool is_profiler_step(const std::string& name) { return name.starts_with("ProfilerStep#"); }

// The device's busy time as merged spans with running totals, so that the
// busy time inside any interval is two binary searches.
class BusyIndex {
 public:
  explicit BusyIndex(const TraceModel::DeviceTimeline& d) {
    for (const IntervalSet* s : {&d.kernels, &d.h2d, &d.d2h, &d.other_copies, &d.memsets})
      spans_.insert(spans_.end(), s->spans().begin(), s->spans().end());
    std::sort(spans_.begin(), spans_.end());
    std::vector<Span> merged;
    for (const Span& s : spans_) {
      if (!merged.empty() && s.first <= merged.back().second) merged.back().second = std::max(merged.back().second, s.second);
      else merged.push_back(s);
    }
    spans_ = std::move(merged);
    prefix_.assign(spans_.size() + 1, 0);
    for (size_t i = 0; i < spans_.size(); ++i) prefix_[i + 1] = prefix_[i] + (spans_[i].second - spans_[i].first);
  }

  uint64_t busy_within(uint64_t from, uint64_t to) const {
    if (to <= from) return 0;
    const auto lo = std::upper_bound(spans_.begin(), spans_.end(), from,
                                     [](uint64_t t, const Span& s) { return t < s.second; }) - spans_.begin();
    const auto hi = std::lower_bound(spans_.begin(), spans_.end(), to,
                                     [](const Span& s, uint64_t t) { return s.first < t; }) - spans_.begin();
    if (lo >= hi) return 0;
    uint64_t total = prefix_[hi] - prefix_[lo];
    total -= from > spans_[lo].first ? from - spans_[lo].first : 0;
    total -= spans_[hi - 1].second > to ? spans_[hi - 1].second - to : 0;
    return total;
  }

 private:
  std::vector<Span> spans_;
  std::vector<uint64_t> prefix_;
};

// Sorted spans merged, so nested instances of one name count once.
std::vector<Span> merged(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (!out.empty() && s.first <= out.back().second) out.back().second = std::max(out.back().second, s.second);
    else out.push_back(s);
  }
  return out;
}

// Judged time: after the call that created the context, as the rest of
// the analysis judges it, and inside the --range scope when there is one.
uint64_t judged_from(const TraceModel& m) { return std::max(m.begin_ns, m.context_init_end_ns); }

std::vector<Span> analyzed_spans(const TraceModel& m) {
  const uint64_t from = judged_from(m);
  if (m.scope_spans.empty()) return from < m.end_ns ? std::vector<Span>{{from, m.end_ns}} : std::vector<Span>{};
  std::vector<Span> out;
  for (const auto& [a, b] : m.scope_spans)
    if (std::max(a, from) < b) out.emplace_back(std::max(a, from), b);
  return out;
}

// The parts of [a, b) inside the analyzed spans (sorted and disjoint).
void clip_to(const std::vector<Span>& analyzed, uint64_t a, uint64_t b, std::vector<Span>* out) {
  auto it = std::upper_bound(analyzed.begin(), analyzed.end(), a, [](uint64_t t, const Span& s) { return t < s.second; });
  for (; it != analyzed.end() && it->first < b; ++it)
    if (std::max(a, it->first) < std::min(b, it->second)) out->emplace_back(std::max(a, it->first), std::min(b, it->second));
}

void idle_under_ranges(const TraceModel& m, const std::vector<Span>& analyzed, const BusyIndex& busy, Metrics& x) {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Span>> by_name;  // (domain, name) -> instances
  for (const RangeInstance& r : m.ranges.ranges)
    if (r.tid == x.feeder_tid) clip_to(analyzed, r.start_ns, r.end_ns, &by_name[{r.domain_id, r.name_id}]);
  uint64_t analyzed_ns = 0;
  for (const Span& s : analyzed) analyzed_ns += s.second - s.first;
  for (auto& [key, spans] : by_name) {
    RangeIdleCover c{m.summary.name_of(key.second), key.first == 0 ? "" : m.summary.name_of(key.first), spans.size()};
    if (spans.empty() || is_profiler_step(c.name)) continue;
    uint64_t idle = 0, length = 0;
    const std::vector<Span> instances = merged(std::move(spans));
    for (const Span& s : instances) {
      length += s.second - s.first;
      idle += (s.second - s.first) - busy.busy_within(s.first, s.second);
    }
    // One range around (nearly) the whole run ("main", "train") says
    // nothing about where the idle time went. A stage entered again and
    // again can cover as much when the loop does little else: a DataLoader
    // on the training thread that the GPU waits for every step (run 2 on a
    // real GPU, docs/gpu-validation.md). It stays, marked: the rules prefer a narrower range.
    const bool covers_run = length >= kWholeRunShare * analyzed_ns;
    if (covers_run && instances.size() < 2) continue;
    c.idle_s = idle / 1e9;
    c.share_of_idle = x.gpu_idle_s > 0 ? std::min(1.0, c.idle_s / x.gpu_idle_s) : 0;
    c.covers_run = covers_run;
    if (idle > 0) x.idle_under_ranges.push_back(std::move(c));
  }
  std::sort(x.idle_under_ranges.begin(), x.idle_under_ranges.end(),
            [](const RangeIdleCover& a, const RangeIdleCover& b) { return a.idle_s > b.idle_s; });
  if (x.idle_under_ranges.size() > 4) x.idle_under_ranges.resize(4);
}

void step_busy(const TraceModel& m, const BusyIndex& busy, Metrics& x) {
  std::vector<std::pair<double, std::string>> steps;
  for (const RangeInstance& r : m.ranges.ranges) {
    if (r.end_ns <= r.start_ns || r.start_ns < m.begin_ns || r.end_ns > m.end_ns) continue;
    const std::string& name = m.summary.name_of(r.name_id);
    if (!is_profiler_step(name)) continue;
    steps.emplace_back(static_cast<double>(busy.busy_within(r.start_ns, r.end_ns)) / (r.end_ns - r.start_ns), name);
  }
  if (steps.empty()) return;
  std::sort(steps.begin(), steps.end());
  x.step_busy = StepBusy{steps.size(), steps[steps.size() / 2].first, steps.front().first, steps.back().first,
                         steps.front().second, steps.back().second};
}

}  // namespace

void range_idle_metrics(const TraceModel& m, Metrics& x) {
  const std::vector<Span> analyzed = analyzed_spans(m);
  if (!x.device_timestamps || analyzed.empty()) return;
  const BusyIndex busy(m.device);
  uint64_t idle = 0;
  for (const auto& [a, b] : analyzed) idle += (b - a) - busy.busy_within(a, b);
  x.gpu_idle_s = idle / 1e9;
  idle_under_ranges(m, analyzed, busy, x);
  step_busy(m, busy, x);
}

}  // namespace gpuscope::analyzer
