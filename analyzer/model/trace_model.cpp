#include "trace_model.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "call_repeats.h"
#include "call_sequence.h"
#include "dense_id_map.h"
#include "driver_samples.h"
#include "function_names.h"
#include "node_cache.h"
#include "record_flags.h"

namespace gpuscope::analyzer {
namespace {

constexpr uint32_t field(fb::GpuSampleField f) { return static_cast<uint32_t>(f); }

class ModelBuilder {
 public:
  ModelBuilder(const reader::TraceSummary& strings_source, const TimeWindow& window, const RangeModel* known_ranges,
               const std::vector<std::pair<uint64_t, uint64_t>>& scope)
      : names_(strings_source), window_(window), everything_(scope.empty() && window.start_s <= 0 && window.end_s < 0),
        known_ranges_(known_ranges), scope_(scope), implicit_(strings_source),
        breakdown_(strings_source, known_ranges != nullptr ? known_ranges->last_profiler_step_ns : 0) {
    if (known_ranges_ != nullptr) locator_.emplace(*known_ranges_);
  }

  void add(const reader::ChunkView& v);
  TraceModel finish(reader::TraceSummary summary);

 private:
  // Per function name id: its kind (classified once) and host time.
  struct FunctionTally {
    std::optional<CallKind> kind;
    TimeCount time;
  };
  FunctionTally& function_tally(uint32_t function_id);
  void add_call(const fb::ApiCall& c);
  void add_copy(const fb::Copy& c);
  void add_alloc(const fb::Alloc& a);
  void add_sync(const fb::Sync& s);
  void add_cpu(const fb::CpuSample& s);
  void add_gpu(const fb::GpuSample& s);
  void add_samples(const reader::ChunkView& v);

  // One branch inline when every record counts (the call was 3 % of `analyze`).
  bool in_window(uint64_t start_ns) { return everything_ || in_window_or_scope(start_ns); }
  bool in_window_or_scope(uint64_t start_ns);
  int64_t scope_span_of(uint64_t ns) const;
  void add_scoped_cpu(const fb::CpuSample& s);
  void attribute_to_range(const fb::ApiCall& c, CallKind kind, uint64_t calls);
  void finish_ranges(uint64_t trace_end_ns);
  // Sampled device tracing: when CUPTI collected (a window of the schedule).
  void add_device_window(const fb::Marker& mk) {
    device_windows_.add(mk.start_ns(), mk.start_ns() + mk.duration_ns());
    if (device_schedule_id_ == 0) device_schedule_id_ = mk.name_id();
  }
  void finish_scope();

  const reader::TraceSummary& names_;  // strings arrive before the records that use them
  TimeWindow window_;
  bool everything_;
  const RangeModel* known_ranges_;
  std::vector<std::pair<uint64_t, uint64_t>> scope_;
  std::optional<RangeLocator> locator_;
  RangeBuilder range_builder_;
  IntervalSet capture_windows_;
  std::vector<uint32_t> capture_trigger_ids_;
  IntervalSet device_windows_;
  uint32_t device_schedule_id_ = 0;
  struct RangeTime {
    std::array<uint64_t, kCallKinds> blocked_ns{};
    uint64_t calls = 0;
  };
  std::unordered_map<int64_t, RangeTime> time_by_range_;  // by index into the known ranges
  // CPU growth inside the scope: per thread (0 = process), the previous
  // in-scope sample and what was summed between samples of the same span.
  struct ScopedCpu {
    uint64_t at = 0, cpu = 0;
    int64_t span = -1;
    uint64_t cpu_sum = 0, time_sum = 0;
  };
  std::unordered_map<uint32_t, ScopedCpu> scoped_cpu_;
  uint64_t origin_ns_ = 0;  // process start, once the metadata is read
  TraceModel m_;
  NodeCache<decltype(TraceModel::sites)> site_of_{m_.sites};
  NodeCache<decltype(TraceModel::threads), 64> thread_of_{m_.threads};
  reader::CallRepeats repeats_;  // for the Sync records of coalesced polls
  CallSequence sequence_;
  ImplicitSyncTally implicit_;
  GpuBreakdownBuilder breakdown_;
  DenseIdMap<FunctionTally> functions_;
  DenseIdMap<uint64_t> kernels_by_name_id_;
  LiveAllocations live_;
  struct LastKernel {
    uint32_t name_id = 0;
    uint64_t shape = 0;
  };
  std::unordered_map<uint64_t, LastKernel> last_kernel_;  // by stream
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> chain_ids_;
  void add_kernel(const fb::Kernel& k);
  uint64_t last_process_cpu_ = 0, first_process_cpu_ = UINT64_MAX;
};

int64_t ModelBuilder::scope_span_of(uint64_t ns) const {
  auto it = std::upper_bound(scope_.begin(), scope_.end(), ns,
                             [](uint64_t t, const std::pair<uint64_t, uint64_t>& s) { return t < s.first; });
  if (it == scope_.begin() || ns >= std::prev(it)->second) return -1;
  return std::prev(it) - scope_.begin();
}

bool ModelBuilder::in_window_or_scope(uint64_t start_ns) {
  if (!scope_.empty() && scope_span_of(start_ns) < 0) return false;
  if (window_.start_s <= 0 && window_.end_s < 0) return true;
  if (origin_ns_ == 0 && names_.process) origin_ns_ = names_.process->start_monotonic_ns;
  const double t = (static_cast<double>(start_ns) - static_cast<double>(origin_ns_)) / 1e9;
  return t >= window_.start_s && (window_.end_s < 0 || t < window_.end_s);
}

ModelBuilder::FunctionTally& ModelBuilder::function_tally(uint32_t function_id) {
  FunctionTally& f = functions_[function_id];
  if (!f.kind) f.kind = classify_function(names_.name_of(function_id));
  return f;
}

// A record of coalesced polls counts as its polls (reader::calls_in) and
// spans them: its duration is the time they held the thread.
void ModelBuilder::add_call(const fb::ApiCall& c) {
  const uint64_t calls = reader::calls_in(c);
  if ((c.flags() & 1) != 0) m_.driver_calls += calls;
  if (c.depth() != 0) {
    m_.nested_calls += calls;
    return;  // its outermost call accounts for the time
  }
  FunctionTally& function = function_tally(c.function_id());
  const CallKind kind = *function.kind;
  if ((c.flags() & container::kCallCaptured) != 0) ++m_.captured_by_kind[static_cast<size_t>(kind)];
  function.time.add(c.duration_ns(), calls);
  m_.host_by_kind[static_cast<size_t>(kind)].add(c.duration_ns(), calls);
  ThreadActivity& t = thread_of_[c.tid()];
  t.first_ns = std::min(t.first_ns, c.start_ns());
  t.last_ns = std::max(t.last_ns, c.start_ns() + c.duration_ns());
  t.blocked_ns[static_cast<size_t>(kind)] += c.duration_ns();
  t.cuda_calls += calls;
  if (kind == CallKind::Launch) {
    t.launch_first_ns = std::min(t.launch_first_ns, c.start_ns());
    t.launch_last_ns = std::max(t.launch_last_ns, c.start_ns() + c.duration_ns());
  }
  if (locator_) attribute_to_range(c, kind, calls);
  auto& site = site_of_[SiteKey{c.function_id(), c.stack_id()}];
  site.calls.add(c.duration_ns(), calls);
  site.kind = kind;
  if (c.result() != 0 && c.result() != TraceModel::kNotReadyResult) site.failed += calls;
  sequence_.add(names_, kind, c.tid(), c.start_ns(), c.duration_ns(),
                SiteKey{c.function_id(), c.stack_id()});
  // cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY are both 2.
  if (kind == CallKind::Alloc && c.result() == 2) ++m_.oom_errors;
  sequence_.add_outcome(kind, c.start_ns(), c.function_id(), c.result());
}


void ModelBuilder::add_copy(const fb::Copy& c) {
  if (c.source() == fb::Source::Device) {
    ++m_.device_records;
    TraceModel::DeviceTimeline& d = m_.device;
    const uint64_t end = c.start_ns() + c.duration_ns();
    if (c.direction() == fb::CopyDirection::HostToDevice) {
      d.h2d.add(c.start_ns(), end);
      d.h2d_bytes += c.bytes();
      d.h2d_ns += c.duration_ns();
    } else if (c.direction() == fb::CopyDirection::DeviceToHost) {
      d.d2h.add(c.start_ns(), end);
      d.d2h_bytes += c.bytes();
      d.d2h_ns += c.duration_ns();
    } else {
      d.other_copies.add(c.start_ns(), end);
    }
    return;
  }
  const auto dir = static_cast<size_t>(c.direction());
  CopyStats& s = m_.copies_by_direction[dir < m_.copies_by_direction.size() ? dir : 0];
  ++s.count;
  s.bytes += c.bytes();
  s.ns += c.duration_ns();
  if (c.src_kind() == fb::MemoryKind::Pageable || c.dst_kind() == fb::MemoryKind::Pageable) {
    ++s.pageable_count;
    s.pageable_bytes += c.bytes();
  }
  if (c.bytes() < kSmallCopyBytes) ++s.small_count;
  if ((c.flags() & container::kCopyAsync) != 0) ++s.async_count;
  if ((c.flags() & container::kCopyPrefetch) != 0) {
    ++s.prefetch_count;
    s.prefetch_bytes += c.bytes();
  }
}

void ModelBuilder::add_alloc(const fb::Alloc& a) {
  // CUPTI's MEMORY2 records repeat what the allocation hooks recorded (every
  // runtime and driver allocation call is hooked), later and in another
  // order: counted twice they doubled the churn, and a late copy of a
  // freed address would have kept it live. The hooks are the record.
  if (a.source() == fb::Source::Device) {
    ++m_.device_records;
    return;
  }
  const bool physical = (a.flags() & container::kAllocPhysical) != 0;
  if (a.op() == fb::AllocOp::Alloc) {
    m_.allocs.add(a.duration_ns());
    m_.alloc_bytes += a.bytes();
    m_.physical_allocs += physical ? 1 : 0;
  } else if (a.op() == fb::AllocOp::Free) {
    m_.frees.add(a.duration_ns());
    m_.physical_frees += physical ? 1 : 0;
  }
  live_.apply(a);
  MemoryCurve& mem = m_.device_memory;
  mem.live_bytes = live_.live_bytes();
  mem.peak_bytes = live_.peak_bytes();
  mem.allocations = live_.allocations();
  mem.untracked = live_.untracked();
  if (mem.live_at_quarter < 0 && mem.allocations * 4 >= m_.allocs.count && m_.allocs.count >= 8)
    mem.live_at_quarter = mem.live_bytes;
}

void ModelBuilder::attribute_to_range(const fb::ApiCall& c, CallKind kind, uint64_t calls) {
  const int64_t index = locator_->locate(c.tid(), c.start_ns());
  if (index < 0) return;
  RangeTime& t = time_by_range_[index];
  t.blocked_ns[static_cast<size_t>(kind)] += c.duration_ns();
  t.calls += calls;
}

// Cumulative CPU counters only say how much CPU was used between two
// samples; in a scope of many spans, only pairs inside one span count.
void ModelBuilder::add_scoped_cpu(const fb::CpuSample& s) {
  ScopedCpu& p = scoped_cpu_[s.tid()];
  const int64_t span = scope_span_of(s.start_ns());
  if (span >= 0 && span == p.span && s.start_ns() > p.at && s.cpu_ns() >= p.cpu) {
    p.cpu_sum += s.cpu_ns() - p.cpu;
    p.time_sum += s.start_ns() - p.at;
  }
  p.at = s.start_ns();
  p.cpu = s.cpu_ns();
  p.span = span;
}

void ModelBuilder::add_cpu(const fb::CpuSample& s) {
  if (!scope_.empty()) add_scoped_cpu(s);
  if (s.tid() == 0) {
    last_process_cpu_ = std::max(last_process_cpu_, s.cpu_ns());
    first_process_cpu_ = std::min(first_process_cpu_, s.cpu_ns());
    return;
  }
  ThreadActivity& t = m_.threads[s.tid()];
  if (t.cpu_first_at == 0 || s.start_ns() < t.cpu_first_at) {
    t.cpu_first_at = s.start_ns();
    t.cpu_first_ns = s.cpu_ns();
  }
  if (s.start_ns() >= t.cpu_last_at) {
    t.cpu_last_at = s.start_ns();
    t.cpu_last_ns = s.cpu_ns();
  }
}

void ModelBuilder::add_gpu(const fb::GpuSample& s) {
  GpuSampleStats& g = m_.gpu[s.device()];
  ++g.samples;
  const uint32_t valid = s.valid();
  if (valid & field(fb::GpuSampleField::Utilization)) {
    g.util_sum += s.gpu_util_pct();
    ++g.util_n;
    g.util_timeline.emplace_back(s.start_ns(), static_cast<uint8_t>(std::min<uint32_t>(s.gpu_util_pct(), 100)));
  }
  if (valid & field(fb::GpuSampleField::SmUtilization)) {
    g.sm_sum += s.sm_util_pct();
    ++g.sm_n;
  }
  if (valid & field(fb::GpuSampleField::DramBandwidth)) {
    g.dram_sum += s.dram_bw_util_pct();
    ++g.dram_n;
  }
  if (valid & field(fb::GpuSampleField::PcieThroughput)) {
    const uint64_t kbps = uint64_t{s.pcie_tx_kbps()} + s.pcie_rx_kbps();
    g.pcie_kbps_sum += kbps;
    g.pcie_kbps_max = std::max(g.pcie_kbps_max, kbps);
    ++g.pcie_n;
  }
  if (valid & field(fb::GpuSampleField::ThrottleReasons)) {
    g.throttle_any |= s.throttle_reasons();
    ++g.throttle_n;
    for (size_t i = 0; i < nvml::kClockEventReasonCount; ++i)
      if (s.throttle_reasons() & nvml::kClockEventReasons[i].bit) ++g.clock_event_samples[i];
  }
  if (valid & field(fb::GpuSampleField::MemoryUsed)) g.memory_used_max = std::max(g.memory_used_max, s.memory_used_bytes());
  if (valid & field(fb::GpuSampleField::Clocks)) {
    g.sm_clock_min = std::min<uint32_t>(g.sm_clock_min, s.sm_clock_mhz());
    g.sm_clock_max = std::max<uint32_t>(g.sm_clock_max, s.sm_clock_mhz());
  }
}

void ModelBuilder::add_kernel(const fb::Kernel& k) {
  ++m_.kernels;
  ++kernels_by_name_id_[k.name_id()];
  const uint64_t shape = (uint64_t{k.grid_x()} << 32) ^ (uint64_t{k.grid_y()} << 48) ^ (uint64_t{k.grid_z()} << 56) ^
                         (uint64_t{k.block_x()} << 16) ^ (uint64_t{k.block_y()} << 8) ^ k.block_z();
  LastKernel& last = last_kernel_[k.stream()];
  if (last.name_id != 0 && last.name_id != k.name_id() && last.shape == shape) {
    ++m_.same_shape_chain_links;
    ++chain_ids_[{last.name_id, k.name_id()}];
  }
  last = LastKernel{k.name_id(), shape};
}

// CPU, GPU and CPU stack samples.
void ModelBuilder::add_samples(const reader::ChunkView& v) {
  for (const auto& s : v.cpu_samples) {
    const bool kept = in_window(s.start_ns());
    if (!scope_.empty() || kept) add_cpu(s);  // a scope needs the samples around its spans
    if (kept) m_.host_samples.add_process_cpu(s);
  }
  for (const auto& s : v.gpu_samples)
    if (in_window(s.start_ns())) add_gpu(s);
  for (const auto& s : v.host_samples)
    if (in_window(s.start_ns())) m_.host_samples.add(s);
  for (const auto& s : v.process_gpu_samples)
    if (in_window(s.start_ns())) add_driver_busy(s, &m_.driver_busy_ns);
  add_gpu_process_names(v, &m_.gpu_process_names);
}

void ModelBuilder::add_sync(const fb::Sync& s) {
  if (s.source() == fb::Source::Device) {  // a stream's wait on the device timeline (imported cuda_sync)
    ++m_.device_records;
    return;
  }
  const auto kind = static_cast<size_t>(s.kind());
  m_.syncs_by_kind[kind < m_.syncs_by_kind.size() ? kind : 0].add(s.duration_ns(), repeats_.calls_of(s));
}

void ModelBuilder::add(const reader::ChunkView& v) {
  const auto keep = [&](const auto& r) { return in_window(r.start_ns()); };
  repeats_.add(v);
  implicit_.add(v, [&](uint64_t start_ns) { return in_window(start_ns); });
  breakdown_.add(v, [&](uint64_t start_ns) { return in_window(start_ns); });
  for (const auto& c : v.api_calls)
    if (keep(c)) add_call(c);
  for (const auto& n : v.call_counts)  // nested calls that were only counted
    if (in_window(n.until_ns())) {
      m_.nested_calls += n.count();
      if ((n.flags() & 1) != 0) m_.driver_calls += n.count();
    }
  for (const auto& c : v.copies)
    if (keep(c)) add_copy(c);
  for (const auto& k : v.kernels) {
    if (!keep(k)) continue;
    if (k.source() == fb::Source::Device) {
      ++m_.device_records;
      m_.device.kernels.add(k.start_ns(), k.start_ns() + k.duration_ns());
      continue;
    }
    add_kernel(k);
  }
  for (const auto& s : v.memsets) {
    if (!keep(s)) continue;
    if (s.source() != fb::Source::Device) {
      ++m_.memsets;
      continue;
    }
    ++m_.device_records;
    m_.device.memsets.add(s.start_ns(), s.start_ns() + s.duration_ns());
  }
  for (const auto& s : v.syncs)
    if (keep(s)) add_sync(s);
  for (const auto& a : v.allocs)
    if (keep(a)) add_alloc(a);
  add_samples(v);
  for (const auto& mk : v.markers) {
    // Provisional markers of a window still open overlap the final one:
    // the union is what was captured.
    if (mk.kind() == fb::MarkerKind::CaptureWindow) capture_windows_.add(mk.start_ns(), mk.start_ns() + mk.duration_ns());
    else if (mk.kind() == fb::MarkerKind::CaptureArmed) capture_trigger_ids_.push_back(mk.name_id());
    else if (mk.kind() == fb::MarkerKind::DeviceWindow) add_device_window(mk);
    else if (known_ranges_ == nullptr) range_builder_.add(mk);
  }
  for (const auto& g : v.graph_launches) {
    if (!keep(g)) continue;
    ++m_.graph_launches;
    m_.graph_work.add(g);
  }
}

TraceModel ModelBuilder::finish(reader::TraceSummary summary) {
  m_.summary = std::move(summary);
  m_.implicit_syncs = implicit_.finish();
  m_.gpu_breakdown = breakdown_.finish(device_windows_.spans());
  const reader::TraceSummary& s = m_.summary;
  functions_.for_each([&](uint32_t id, const FunctionTally& f) {
    TimeCount& out = m_.host_by_function[s.name_of(id)];
    out.count += f.time.count;
    out.ns += f.time.ns;
  });
  kernels_by_name_id_.for_each([&](uint32_t id, uint64_t n) { m_.kernels_by_name[s.name_of(id)] += n; });
  for (const auto& [ids, n] : chain_ids_) m_.chain_pairs[s.name_of(ids.first) + " -> " + s.name_of(ids.second)] += n;
  m_.begin_ns = s.process && s.process->start_monotonic_ns != 0 ? s.process->start_monotonic_ns : s.first_ns;
  m_.end_ns = std::max(s.last_ns, s.end ? s.end->end_monotonic_ns : 0);
  finish_ranges(m_.end_ns);
  const uint64_t origin = m_.begin_ns;
  if (window_.start_s > 0) m_.begin_ns = std::min(m_.end_ns, origin + static_cast<uint64_t>(window_.start_s * 1e9));
  if (window_.end_s >= 0) m_.end_ns = std::min(m_.end_ns, origin + static_cast<uint64_t>(window_.end_s * 1e9));
  // Cumulative process CPU time: in a window, the growth within it.
  m_.process_cpu_ns = last_process_cpu_ >= first_process_cpu_ ? last_process_cpu_ - first_process_cpu_ : 0;
  if (window_.start_s <= 0) m_.process_cpu_ns = last_process_cpu_;
  if (!scope_.empty()) finish_scope();
  sequence_.finish(m_);
  return std::move(m_);
}

void ModelBuilder::finish_ranges(uint64_t trace_end_ns) {
  m_.ranges = known_ranges_ != nullptr ? *known_ranges_ : range_builder_.finish(trace_end_ns);
  if (known_ranges_ == nullptr) m_.ranges.last_profiler_step_ns = last_profiler_step_start(m_.ranges, m_.summary);
  m_.capture_windows = capture_windows_.spans();
  if (!capture_trigger_ids_.empty()) m_.capture_trigger = m_.summary.name_of(capture_trigger_ids_.front());
  m_.device_windows = device_windows_.spans();
  if (device_schedule_id_ != 0) m_.device_schedule = m_.summary.name_of(device_schedule_id_);
  m_.ranges_attributed = locator_.has_value();
  std::map<std::pair<uint32_t, uint32_t>, RangeStats> by_name;
  for (size_t i = 0; i < m_.ranges.ranges.size(); ++i) {
    const RangeInstance& r = m_.ranges.ranges[i];
    if (!in_window(r.start_ns)) continue;
    RangeStats& st = by_name[{r.domain_id, r.name_id}];
    ++st.count;
    st.total_ns += r.end_ns - r.start_ns;
    st.unterminated += r.unterminated ? 1 : 0;
    st.max_depth = std::max(st.max_depth, r.depth);
    st.start_end |= r.start_end;
    if (auto it = time_by_range_.find(static_cast<int64_t>(i)); it != time_by_range_.end()) {
      for (size_t k = 0; k < kCallKinds; ++k) st.blocked_ns[k] += it->second.blocked_ns[k];
      st.calls += it->second.calls;
    }
  }
  // Numbered instances of one range ("ProfilerStep#12") are one row.
  std::map<std::pair<std::string, std::string>, RangeStats> by_group;
  for (auto& [ids, st] : by_name) {
    st.domain = ids.first != 0 ? m_.summary.name_of(ids.first) : "";  // names_ is moved into m_.summary by now
    st.name = range_group_name(ids.second != 0 ? m_.summary.name_of(ids.second) : "(unnamed)");
    merge_range_stats(by_group[{st.domain, st.name}], st);
  }
  for (auto& [key, st] : by_group) m_.range_stats.push_back(std::move(st));
  std::stable_sort(m_.range_stats.begin(), m_.range_stats.end(),
                   [](const RangeStats& a, const RangeStats& b) { return a.total_ns > b.total_ns; });
}

// The scope's spans clipped to the window; CPU figures from in-span sample
// pairs only. ThreadActivity keeps first/last cumulative values, so the
// in-scope sums are stored as a series starting at zero (metrics divide
// the differences).
void ModelBuilder::finish_scope() {
  for (const auto& [a, b] : scope_) {
    const uint64_t from = std::max(a, m_.begin_ns), to = std::min(b, m_.end_ns);
    if (to > from) m_.scope_spans.emplace_back(from, to);
  }
  if (m_.scope_spans.empty()) m_.end_ns = m_.begin_ns;  // nothing of the scope inside the window
  m_.process_cpu_ns = scoped_cpu_.count(0) ? scoped_cpu_[0].cpu_sum : 0;
  for (auto& [tid, t] : m_.threads) {
    auto it = scoped_cpu_.find(tid);
    if (tid == 0 || it == scoped_cpu_.end() || it->second.time_sum == 0) {
      t.cpu_first_at = t.cpu_last_at = t.cpu_first_ns = t.cpu_last_ns = 0;
      continue;
    }
    t.cpu_first_at = 1;
    t.cpu_last_at = 1 + it->second.time_sum;
    t.cpu_first_ns = 0;
    t.cpu_last_ns = it->second.cpu_sum;
  }
}

}  // namespace

TraceModel build_model(reader::TraceReader& reader, const TimeWindow& window, const RangeModel* known_ranges,
                       const std::vector<std::pair<uint64_t, uint64_t>>& scope, const reader::ChunkVisitor& also) {
  reader::SummaryBuilder summary(reader.info());
  ModelBuilder model(summary.current(), window, known_ranges, scope);
  // The model's work per record is about the reader's: they overlap, and
  // the summary's record tallies go to the reading thread.
  reader::RecordTally& tally = summary.records();
  reader.read_overlapped(
      [&](const reader::ChunkView& v) {
        summary.add_tables(v);
        model.add(v);
        if (also) also(v);
      },
      [&tally](const reader::ChunkView& v) { tally.add(v); });
  return model.finish(summary.finish(reader));
}

}  // namespace gpuscope::analyzer
