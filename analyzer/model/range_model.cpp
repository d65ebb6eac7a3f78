#include "range_model.h"

#include "trace_model.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpuscope::analyzer {

void RangeBuilder::add(const fb::Marker& m) {
  using K = fb::MarkerKind;
  const K kind = m.kind();
  if (kind == K::Instant) {
    ++marks_;
    return;
  }
  if (kind == K::Range) {  // a closed range (imported traces): start and duration known
    if (stack_events_.size() + starts_.size() + ends_.size() + closed_.size() * 2 >= max_events_) {
      ++over_limit_;
      return;
    }
    closed_.push_back(RangeInstance{m.start_ns(), m.start_ns() + m.duration_ns(), m.name_id(), m.domain_id(), m.tid(),
                                    0, false, false});
    return;
  }
  std::vector<Event>* into = nullptr;
  if (kind == K::RangePush || kind == K::RangePop) into = &stack_events_;
  else if (kind == K::RangeStart) into = &starts_;
  else if (kind == K::RangeEnd) into = &ends_;
  if (into == nullptr) return;  // thread names
  if (stack_events_.size() + starts_.size() + ends_.size() + closed_.size() * 2 >= max_events_) {
    ++over_limit_;
    return;
  }
  into->push_back(Event{m.start_ns(), m.correlation_id(), m.name_id(), m.domain_id(), m.tid(), kind});
}

// Per thread and domain, in recorded order (stable: equal timestamps keep
// the order the thread recorded them in).
void RangeBuilder::pair_push_pop(std::vector<Event>& events, uint64_t trace_end_ns, RangeModel* out) {
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.tid, a.domain_id, a.ns) < std::tie(b.tid, b.domain_id, b.ns);
  });
  std::vector<Event> open;
  const auto close_all_open = [&] {
    for (const Event& e : open) {
      out->ranges.push_back(RangeInstance{e.ns, std::max(e.ns, trace_end_ns), e.name_id, e.domain_id, e.tid,
                                          static_cast<uint16_t>(&e - open.data()), false, true});
      ++out->unterminated;
    }
    open.clear();
  };
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (i > 0 && (events[i - 1].tid != e.tid || events[i - 1].domain_id != e.domain_id)) close_all_open();
    if (e.kind == fb::MarkerKind::RangePush) {
      open.push_back(e);
      continue;
    }
    if (open.empty()) {
      ++out->unmatched_pops;
      continue;
    }
    const Event& top = open.back();
    out->ranges.push_back(RangeInstance{top.ns, std::max(top.ns, e.ns), top.name_id, top.domain_id, top.tid,
                                        static_cast<uint16_t>(open.size() - 1), false, false});
    open.pop_back();
  }
  close_all_open();
}

void RangeBuilder::pair_start_end(uint64_t trace_end_ns, RangeModel* out) {
  std::unordered_map<uint64_t, const Event*> started;
  for (const Event& s : starts_) started.emplace(s.range_id, &s);
  for (const Event& e : ends_) {
    auto it = started.find(e.range_id);
    if (it == started.end() || it->second == nullptr) {
      ++out->unmatched_ends;  // never started, or ended twice
      continue;
    }
    const Event& s = *it->second;
    out->ranges.push_back(RangeInstance{s.ns, std::max(s.ns, e.ns), s.name_id, s.domain_id, s.tid, 0, true, false});
    it->second = nullptr;
  }
  for (const Event& s : starts_) {
    auto it = started.find(s.range_id);
    if (it == started.end() || it->second != &s) continue;
    out->ranges.push_back(RangeInstance{s.ns, std::max(s.ns, trace_end_ns), s.name_id, s.domain_id, s.tid, 0, true, true});
    ++out->unterminated;
  }
}

// Closed ranges nest by time alone: per thread and domain, a range inside
// another (starting no earlier, ending no later) is one level deeper.
void RangeBuilder::nest_closed(RangeModel* out) {
  std::sort(closed_.begin(), closed_.end(), [](const RangeInstance& a, const RangeInstance& b) {
    return std::tie(a.tid, a.domain_id, a.start_ns, b.end_ns) < std::tie(b.tid, b.domain_id, b.start_ns, a.end_ns);
  });
  std::vector<uint64_t> open_ends;
  for (size_t i = 0; i < closed_.size(); ++i) {
    RangeInstance& r = closed_[i];
    if (i > 0 && (closed_[i - 1].tid != r.tid || closed_[i - 1].domain_id != r.domain_id)) open_ends.clear();
    while (!open_ends.empty() && open_ends.back() <= r.start_ns) open_ends.pop_back();
    r.depth = static_cast<uint16_t>(std::min<size_t>(open_ends.size(), UINT16_MAX));
    open_ends.push_back(r.end_ns);
    out->ranges.push_back(r);
  }
}

RangeModel RangeBuilder::finish(uint64_t trace_end_ns) {
  RangeModel out;
  out.marks = marks_;
  out.events_over_limit = over_limit_;
  pair_push_pop(stack_events_, trace_end_ns, &out);
  pair_start_end(trace_end_ns, &out);
  nest_closed(&out);
  std::stable_sort(out.ranges.begin(), out.ranges.end(),
                   [](const RangeInstance& a, const RangeInstance& b) { return a.start_ns < b.start_ns; });
  stack_events_ = {};
  starts_ = {};
  ends_ = {};
  closed_ = {};
  return out;
}

RangeLocator::RangeLocator(const RangeModel& model) {
  std::map<uint32_t, std::vector<int64_t>> per_thread;
  std::vector<int64_t> start_end;
  for (size_t i = 0; i < model.ranges.size(); ++i) {
    const RangeInstance& r = model.ranges[i];
    (r.start_end ? start_end : per_thread[r.tid]).push_back(static_cast<int64_t>(i));
  }
  for (const auto& [tid, members] : per_thread) by_thread_.emplace(tid, flatten(model.ranges, members));
  process_wide_ = flatten(model.ranges, start_end);
}

// Sweeps opens and closes in time order; between two consecutive events the
// innermost (most recently opened, still open) range holds the time.
RangeLocator::Segments RangeLocator::flatten(const std::vector<RangeInstance>& all,
                                             const std::vector<int64_t>& members) {
  struct Edge {
    uint64_t ns;
    bool open;
    int64_t index;
  };
  std::vector<Edge> edges;
  edges.reserve(members.size() * 2);
  for (const int64_t i : members) {
    edges.push_back({all[i].start_ns, true, i});
    edges.push_back({all[i].end_ns, false, i});
  }
  // Closes before opens at the same instant; among opens, outer (earlier
  // index in start order, longer) first so the inner one ends on top.
  std::stable_sort(edges.begin(), edges.end(), [&](const Edge& a, const Edge& b) {
    if (a.ns != b.ns) return a.ns < b.ns;
    if (a.open != b.open) return !a.open;
    return a.open && all[a.index].end_ns > all[b.index].end_ns;
  });
  Segments out;
  std::vector<int64_t> open;
  for (const Edge& e : edges) {
    if (e.open) {
      open.push_back(e.index);
    } else {
      auto it = std::find(open.rbegin(), open.rend(), e.index);
      if (it != open.rend()) open.erase(std::next(it).base());
    }
    const int64_t top = open.empty() ? -1 : open.back();
    if (!out.empty() && out.back().first == e.ns) out.back().second = top;
    else out.emplace_back(e.ns, top);
  }
  return out;
}

int64_t RangeLocator::find(const Segments& s, uint64_t ns) {
  auto it = std::upper_bound(s.begin(), s.end(), ns,
                             [](uint64_t t, const std::pair<uint64_t, int64_t>& seg) { return t < seg.first; });
  return it == s.begin() ? -1 : std::prev(it)->second;
}

int64_t RangeLocator::locate(uint32_t tid, uint64_t ns) const {
  if (auto it = by_thread_.find(tid); it != by_thread_.end()) {
    const int64_t inner = find(it->second, ns);
    if (inner >= 0) return inner;
  }
  return find(process_wide_, ns);
}

std::string range_group_name(const std::string& name) {
  size_t digits = name.size();
  while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') --digits;
  if (digits == name.size() || digits == 0 || name[digits - 1] != '#') return name;
  return name.substr(0, digits) + "*";
}

std::string_view range_name_prefix(std::string_view name) {
  return name.size() > 1 && name.back() == '*' ? name.substr(0, name.size() - 1) : std::string_view();
}

std::vector<size_t> ranges_named(const TraceModel& model, const std::string& name) {
  std::unordered_map<uint32_t, bool> matches;  // name id -> message is `name` (or starts with its prefix)
  const std::string_view prefix = range_name_prefix(name);
  const std::string_view wanted = prefix.empty() ? std::string_view(name) : prefix;
  std::vector<size_t> out;
  for (size_t i = 0; i < model.ranges.ranges.size(); ++i) {
    const RangeInstance& r = model.ranges.ranges[i];
    auto [it, fresh] = matches.try_emplace(r.name_id, false);
    if (fresh && r.name_id != 0) {
      const std::string message = model.summary.name_of(r.name_id);
      it->second = prefix.empty() ? message == wanted : message.starts_with(wanted);
    }
    if (it->second) out.push_back(i);
  }
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> range_spans(const TraceModel& model, const std::string& name) {
  IntervalSet spans;
  for (const size_t i : ranges_named(model, name)) {
    const RangeInstance& r = model.ranges.ranges[i];
    spans.add(r.start_ns, std::max(r.end_ns, r.start_ns + 1));
  }
  return spans.spans();
}

void merge_range_stats(RangeStats& into, const RangeStats& from) {
  if (into.count == 0) {
    into = from;
    return;
  }
  into.count += from.count;
  into.total_ns += from.total_ns;
  into.unterminated += from.unterminated;
  into.max_depth = std::max(into.max_depth, from.max_depth);
  into.start_end |= from.start_end;
  for (size_t k = 0; k < kCallKinds; ++k) into.blocked_ns[k] += from.blocked_ns[k];
  into.calls += from.calls;
}

}  // namespace gpuscope::analyzer
