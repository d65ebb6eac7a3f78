#include "request_tally.h"

#include <algorithm>

#include "call_repeats.h"

namespace gpuscope::analyzer {

namespace {

bool is_pageable(fb::MemoryKind k) { return k == fb::MemoryKind::Pageable; }

RequestPart copy_part(const fb::Copy& c) {
  const bool pageable = is_pageable(c.src_kind()) || is_pageable(c.dst_kind());
  switch (c.direction()) {
    case fb::CopyDirection::HostToDevice:
      return pageable ? RequestPart::CopyToDevicePageable : RequestPart::CopyToDevicePinned;
    case fb::CopyDirection::DeviceToHost:
      return pageable ? RequestPart::CopyToHostPageable : RequestPart::CopyToHostPinned;
    default: return RequestPart::CopyOther;
  }
}

RequestPart part_of_kind(CallKind kind) {
  switch (kind) {
    case CallKind::Sync: return RequestPart::ExplicitSync;
    case CallKind::Copy: return RequestPart::CopyOther;
    case CallKind::Memset: return RequestPart::Memset;
    case CallKind::Alloc: return RequestPart::Alloc;
    case CallKind::Free: return RequestPart::Free;
    case CallKind::Launch: return RequestPart::Launch;
    default: return RequestPart::OtherCuda;
  }
}

}  // namespace

RequestTally::RequestTally(const reader::TraceSummary& names, std::string name,
                           const std::vector<RangeInstance>& requests, double tail_quantile)
    : names_(names), implicit_(names), cpu_period_ns_(names.host_sampling ? names.host_sampling->period_ns : 0) {
  out_.name = std::move(name);
  groups_ = rank_requests(requests, tail_quantile, &out_);
  cuda_ns_.assign(requests.size(), 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    const RangeInstance& r = requests[i];
    durations_.push_back(r.end_ns - r.start_ns);
    if (groups_[i] == 0) continue;
    by_thread_[r.tid].push_back(Member{r.start_ns, r.end_ns, groups_[i], i, r.tid});
    by_start_.push_back(by_thread_[r.tid].back());
  }
  const auto earlier = [](const Member& a, const Member& b) { return a.start_ns < b.start_ns; };
  for (auto& [tid, members] : by_thread_) std::sort(members.begin(), members.end(), earlier);
  std::sort(by_start_.begin(), by_start_.end(), earlier);
  for (const Member& m : by_start_) latest_end_.push_back(std::max(latest_end_.empty() ? 0 : latest_end_.back(), m.end_ns));
  implicit_.on_counted([this](ImplicitCause cause, const fb::ApiCall& c) {
    if (implicit_cause_info(cause).counts_as_blocked) implicit_calls_.insert(&c);
  });
}

// The latest-starting request of the thread open at `ns` (requests of one
// name rarely nest; when they do, the inner one holds the call).
const RequestTally::Member* RequestTally::locate(uint32_t tid, uint64_t ns) const {
  auto it = by_thread_.find(tid);
  if (it == by_thread_.end()) return nullptr;
  const std::vector<Member>& m = it->second;
  auto after = std::upper_bound(m.begin(), m.end(), ns, [](uint64_t t, const Member& r) { return t < r.start_ns; });
  for (int looked = 0; after != m.begin() && looked < 8; ++looked) {
    --after;
    if (ns < after->end_ns) return &*after;
  }
  return nullptr;
}

void RequestTally::link_typed_records(const reader::ChunkView& v) {
  linked_before_.swap(linked_);
  linked_.clear();
  for (const auto& c : v.copies) {
    if (c.source() == fb::Source::Device) continue;
    Linked& l = linked_[c.correlation_id()];
    l.copy = true;
    l.copy_part = copy_part(c);
    l.bytes += c.bytes();
  }
  for (const auto& k : v.kernels)
    if (k.source() != fb::Source::Device) linked_[k.correlation_id()].kernel = true;
}

RequestTally::Linked RequestTally::linked(uint64_t correlation_id) const {
  if (correlation_id == 0) return {};
  if (auto it = linked_.find(correlation_id); it != linked_.end()) return it->second;
  if (auto it = linked_before_.find(correlation_id); it != linked_before_.end()) return it->second;
  return {};
}

RequestPart RequestTally::part_of(const fb::ApiCall& c, const Linked& link) {
  if (implicit_calls_.count(&c) != 0) return RequestPart::ImplicitSync;
  auto [it, fresh] = kinds_.try_emplace(c.function_id(), CallKind::Other);
  if (fresh) it->second = classify_function(names_.name_of(c.function_id()));
  if (it->second == CallKind::Copy && link.copy) return link.copy_part;
  return part_of_kind(it->second);
}

// How many grouped requests start before `ns` (by_start_'s prefix).
size_t RequestTally::started_before(uint64_t ns) const {
  return std::lower_bound(by_start_.begin(), by_start_.end(), ns,
                          [](const Member& m, uint64_t t) { return m.start_ns < t; }) - by_start_.begin();
}

// Another thread's call: its time inside each request open meanwhile (the
// `started` requests that began before it ends, latest first, until every
// earlier one has ended before it starts).
void RequestTally::add_concurrent(const OtherWork& w, size_t started) {
  const uint64_t start = w.start_ns, end = w.end_ns;
  const RequestPart part = w.part;
  size_t i = started;
  for (size_t looked = 0; i > 0 && latest_end_[i - 1] > start; ++looked) {
    if (looked == kOverlapLookback) {
      ++out_.overlap_lookups_cut;
      return;
    }
    const Member& m = by_start_[--i];
    if (m.tid == w.tid || m.end_ns <= start) continue;
    const uint64_t overlap = std::min(end, m.end_ns) - std::max(start, m.start_ns);
    concurrent_[m.request][static_cast<size_t>(part)] += overlap;
    RequestGroup& g = group(m.group);
    g.concurrent_ns[static_cast<size_t>(part)] += overlap;
    RequestGroup::Site& site = g.concurrent_sites[w.site];
    site.part = part;
    site.calls.add(overlap, 1);
  }
}

// A call on a request's own thread counts in that request; any call, in
// the requests of other threads open meanwhile. Most calls are in neither,
// and are left after two binary searches.
void RequestTally::add_call(const fb::ApiCall& c) {
  const Member* in = locate(c.tid(), c.start_ns());
  const size_t started = started_before(c.start_ns() + c.duration_ns());
  const bool beside = started > 0 && latest_end_[started - 1] > c.start_ns();
  if (in == nullptr && !beside) return;
  const Linked link = linked(c.correlation_id());
  const RequestPart part = part_of(c, link);
  if (beside)
    add_concurrent({c.tid(), c.start_ns(), c.start_ns() + c.duration_ns(), part, {c.function_id(), c.stack_id()}},
                   started);
  if (in == nullptr) return;
  RequestGroup& g = group(in->group);
  const uint64_t ns = std::min(c.duration_ns(), in->end_ns - c.start_ns());  // a call past the request's end
  g.part_ns[static_cast<size_t>(part)] += ns;
  g.copied_bytes += link.bytes;
  g.kernels += link.kernel ? 1 : 0;
  const uint64_t calls = reader::calls_in(c);
  g.cuda_calls += calls;
  RequestGroup::Site& site = g.sites[SiteKey{c.function_id(), c.stack_id()}];
  site.part = part;
  site.calls.add(ns, calls);
  cuda_ns_[in->request] += ns;
  if (in->group == 1) tail_parts_[in->request][static_cast<size_t>(part)] += ns;
  if (c.correlation_id() != 0) link_to_device(c.correlation_id(), *in);
}

// The call's device records: those already read (early), and the ones to
// come through device_link_.
void RequestTally::link_to_device(uint64_t correlation_id, const Member& in) {
  RequestGroup& g = group(in.group);
  for (auto* early : {&early_device_, &early_device_before_}) {
    const auto [first, last] = early->equal_range(correlation_id);
    for (auto it = first; it != last; ++it) g.*(it->second.kind) += it->second.ns;
    early->erase(first, last);
  }
  if (device_link_.size() < kMaxDeviceLinks) device_link_.emplace(correlation_id, in.group);
  else ++out_.device_links_over_limit;
}

void RequestTally::add_device_time(uint64_t correlation_id, uint64_t ns, uint64_t RequestGroup::*kind) {
  out_.device_records = true;
  if (correlation_id == 0) return;
  const auto it = device_link_.find(correlation_id);
  if (it == device_link_.end()) {
    early_device_.emplace(correlation_id, EarlyDevice{ns, kind});
    return;
  }
  group(it->second).*kind += ns;
}

void RequestTally::add_device_records(const reader::ChunkView& v) {
  early_device_before_.swap(early_device_);
  early_device_.clear();
  for (const auto& k : v.kernels)
    if (k.source() == fb::Source::Device) add_device_time(k.correlation_id(), k.duration_ns(), &RequestGroup::device_kernel_ns);
  for (const auto& c : v.copies)
    if (c.source() == fb::Source::Device) add_device_time(c.correlation_id(), c.duration_ns(), &RequestGroup::device_copy_ns);
  for (const auto& m : v.memsets)
    if (m.source() == fb::Source::Device)
      add_device_time(m.correlation_id(), m.duration_ns(), &RequestGroup::device_memset_ns);
}

void RequestTally::add(const reader::ChunkView& v) {
  link_typed_records(v);
  implicit_calls_.clear();
  implicit_.add(v, [](uint64_t) { return true; });
  add_device_records(v);
  for (const auto& c : v.api_calls)
    if (c.depth() == 0) add_call(c);
  for (const auto& sample : v.host_samples) add_cpu_sample(sample);
  driver_samples_.add(v);
}

// A CPU stack sample stands for one sampling period of its thread's CPU
// time, ending when it was taken: another thread's host code on the CPU
// (part OutsideCuda, site: its stack under function id 0) during the
// requests open meanwhile.
void RequestTally::add_cpu_sample(const fb::HostSample& sample) {
  if (cpu_period_ns_ == 0) return;
  const uint64_t end = sample.start_ns(), start = end - std::min(end, cpu_period_ns_);
  const size_t started = started_before(end);
  if (started == 0 || latest_end_[started - 1] <= start) return;
  add_concurrent({sample.tid(), start, end, RequestPart::OutsideCuda, {kOnCpuSite, sample.stack_id()}}, started);
}

void RequestTally::set_co_tenants(std::vector<const GpuTenant*> co_tenants, uint64_t others) {
  co_tenants_ = std::move(co_tenants);
  out_.other_traces = others;
}

// Outside CUDA: each request's span less its CUDA calls' time.
RequestLatency RequestTally::finish() {
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i] == 0) continue;
    RequestGroup& g = group(groups_[i]);
    ++g.requests;
    g.total_ns += durations_[i];
    const uint64_t outside = durations_[i] - std::min(durations_[i], cuda_ns_[i]);
    g.part_ns[static_cast<size_t>(RequestPart::OutsideCuda)] += outside;
    if (groups_[i] == 1) tail_parts_[i][static_cast<size_t>(RequestPart::OutsideCuda)] = outside;
    count_concurrent(i, g);
  }
  count_tail_growth();
  overlap_all_co_tenants();
  return std::move(out_);
}

// Traced co-tenants, then the processes only the driver's samples name.
void RequestTally::overlap_all_co_tenants() {
  std::vector<int> traced;
  for (const GpuTenant* t : co_tenants_) traced.push_back(t->pid);
  untraced_ = driver_samples_.tenants(names_, traced, &out_.driver_samples);
  std::vector<const GpuTenant*> tenants = co_tenants_;
  for (const GpuTenant& t : untraced_) tenants.push_back(&t);
  if (tenants.empty()) return;
  std::vector<GroupedSpan> spans;
  for (const Member& m : by_start_) spans.push_back({m.start_ns, m.end_ns, m.group});
  out_.co_tenants = overlap_co_tenants(spans, tenants);
}

// The parts other threads were busy in for kConcurrentShare of the request.
void RequestTally::count_concurrent(size_t request, RequestGroup& g) {
  const auto it = concurrent_.find(request);
  if (it == concurrent_.end()) return;
  for (size_t p = 0; p < kRequestParts; ++p)
    if (static_cast<double>(it->second[p]) >= kConcurrentShare * static_cast<double>(durations_[request]))
      ++g.concurrent_requests[p];
}

void RequestTally::count_tail_growth() {
  const double slow_ns = kTailSlowdown * out_.median_band.mean_ns();
  for (const auto& [request, parts] : tail_parts_) {
    if (static_cast<double>(durations_[request]) < slow_ns) continue;
    size_t grew = 0;
    double most = -1e300;
    for (size_t p = 0; p < kRequestParts; ++p) {
      const double growth = static_cast<double>(parts[p]) - out_.median_band.mean_part_ns(p);
      if (growth > most) {
        most = growth;
        grew = p;
      }
    }
    ++out_.tail_grew_most[grew];
  }
}

}  // namespace gpuscope::analyzer
