// The timeline walk: NVTX ranges, capture windows, process names
// (timeline_walk.h, docs/export.md).
#include <algorithm>
#include <set>

#include "call_sites.h"
#include "timeline_walk.h"

namespace gpuscope::exporter {
namespace {

constexpr size_t kMaxNvtxDepth = 1024;
constexpr size_t kMaxOpenAsync = size_t{1} << 20;

}  // namespace

void TimelineWalk::marker(const fb::Marker& m) {
  switch (m.kind()) {
    case fb::MarkerKind::RangePush: nvtx_push(m); break;
    case fb::MarkerKind::RangePop: nvtx_pop(m); break;
    case fb::MarkerKind::RangeStart: nvtx_start(m); break;
    case fb::MarkerKind::RangeEnd: nvtx_end(m); break;
    case fb::MarkerKind::CaptureWindow: {
      uint64_t& d = capture_windows_[m.start_ns()];
      d = std::max(d, m.duration_ns());  // provisional copies of a window still open
      break;
    }
    case fb::MarkerKind::DeviceWindow: {
      uint64_t& d = device_windows_[m.start_ns()];
      d = std::max(d, m.duration_ns());
      break;
    }
    case fb::MarkerKind::ThreadName:
      if (m.name_id() != 0) sink_.thread_name({pid_, m.tid()}, name(m.name_id()).text);
      break;
    case fb::MarkerKind::Range: {  // a closed range (older writers): push and pop at once
      nvtx_push(m);
      fb::Marker pop(m.start_ns() + m.duration_ns(), 0, 0, 0, m.domain_id(), m.tid(), fb::MarkerKind::RangePop, 0, 0);
      nvtx_pop(pop);
      break;
    }
    case fb::MarkerKind::ProcessRange: {
      nvtx_start(m);
      fb::Marker end(m.start_ns() + m.duration_ns(), 0, m.correlation_id(), 0, m.domain_id(), m.tid(),
                     fb::MarkerKind::RangeEnd, 0, 0);
      nvtx_end(end);
      break;
    }
    default:  // Instant: a mark on the thread's own row
      if (m.domain_id() != 0) fresh_args().add_text("domain", name(m.domain_id()).text);
      else fresh_args();
      sink_.instant({pid_, m.tid()}, name(m.name_id()), "nvtx", m.start_ns(), args_);
  }
}

// Push/pop ranges get a row per thread and domain next to the thread's CUDA
// calls (as Nsight Systems shows them): pairs of one domain always nest,
// but two domains, or a range and a call, need not.
TimelineWalk::NvtxTrack& TimelineWalk::nvtx_track(uint32_t tid, uint32_t domain) {
  auto [it, fresh] = nvtx_.try_emplace({tid, domain});
  if (fresh) {
    const std::string d = domain == 0 ? "" : summary_.current().name_of(domain) + " ";
    it->second.tid = synthetic_track(fmt::format("NVTX {}(thread {})", d, tid));
  }
  return it->second;
}

void TimelineWalk::nvtx_push(const fb::Marker& m) {
  NvtxTrack& t = nvtx_track(m.tid(), m.domain_id());
  if (t.open.size() >= kMaxNvtxDepth) {
    ++t.too_deep;  // its pop is dropped too
    return;
  }
  t.open.push_back({m.start_ns(), m.name_id()});
}

void TimelineWalk::nvtx_pop(const fb::Marker& m) {
  NvtxTrack& t = nvtx_track(m.tid(), m.domain_id());
  if (t.too_deep != 0) {
    --t.too_deep;
    return;
  }
  if (t.open.empty()) {
    ++stats_.unmatched_pops;
    return;
  }
  const OpenRange r = t.open.back();
  t.open.pop_back();
  range_span(t, r, std::max(r.start_ns, m.start_ns()), m.domain_id(), false);
}

void TimelineWalk::range_span(NvtxTrack& t, const OpenRange& r, uint64_t end, uint32_t domain, bool unterminated) {
  uint64_t start = r.start_ns;
  const auto placed = t.guard.place(&start, end);
  Args& a = fresh_args();
  a.add_uint("depth", t.open.size());
  if (domain != 0) a.add_text("domain", name(domain).text);
  if (unterminated) a.add_bool("unterminated", true);
  if (placed == NestGuard::Placed::Rejected) {
    ++stats_.unplaced;
    sink_.instant({pid_, t.tid}, name(r.name_id), "nvtx", r.start_ns, a);
    return;
  }
  if (placed == NestGuard::Placed::Clamped) ++stats_.clamped;
  sink_.slice({pid_, t.tid}, name(r.name_id), "nvtx", start, end - start, a);
}

void TimelineWalk::nvtx_start(const fb::Marker& m) {
  if (async_.size() >= kMaxOpenAsync) return;
  async_[m.correlation_id()] = OpenAsync{m.start_ns(), m.name_id(), m.domain_id(), m.tid()};
}

void TimelineWalk::nvtx_end(const fb::Marker& m) {
  auto it = async_.find(m.correlation_id());
  if (it == async_.end()) {
    ++stats_.unmatched_pops;
    return;
  }
  async_range(m.correlation_id(), it->second, std::max(it->second.start_ns, m.start_ns()), false);
  async_.erase(it);
}

// Start/end ranges may cross threads and overlap in any way: rows of their own.
void TimelineWalk::async_range(uint64_t id, const OpenAsync& r, uint64_t end, bool unterminated) {
  Args& a = fresh_args();
  a.add_uint("range_id", id);
  if (r.domain_id != 0) a.add_text("domain", name(r.domain_id).text);
  if (unterminated) a.add_bool("unterminated", true);
  sink_.async_range({pid_, r.tid}, name(r.name_id), "nvtx", id, r.start_ns, end, a);
}

// Ranges still open when the trace ends (the process died, or never
// popped) end there, flagged, innermost first so they nest.
void TimelineWalk::close_nvtx(uint64_t end_ns) {
  for (auto& [key, t] : nvtx_)
    while (!t.open.empty()) {
      const OpenRange r = t.open.back();
      t.open.pop_back();
      ++stats_.unterminated;
      range_span(t, r, std::max(end_ns, r.start_ns), key.second, true);
    }
  for (const auto& [id, r] : async_) {
    ++stats_.unterminated;
    async_range(id, r, std::max(end_ns, r.start_ns), true);
  }
  async_.clear();
}

// Capture windows and sampled device tracing's windows, each on a track of
// its own. Windows are disjoint, but a provisional window can outlast a
// later one only through damage: merge overlapping ones.
void TimelineWalk::write_capture_windows() {
  write_windows(capture_windows_, "capture windows", "capture window");
  write_windows(device_windows_, "device tracing (sampled)", "device records collected");
}

void TimelineWalk::write_windows(const std::map<uint64_t, uint64_t>& windows, const char* track, const char* slice) {
  if (windows.empty()) return;
  const uint64_t tid = synthetic_track(track);
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& [start, dur] : windows) {
    if (!merged.empty() && start <= merged.back().second) merged.back().second = std::max(merged.back().second, start + dur);
    else merged.emplace_back(start, start + dur);
  }
  fresh_args();
  for (const auto& [a, b] : merged) sink_.slice({pid_, tid}, {slice}, "gpuscope", a, b - a, args_);
}

void TimelineWalk::write_process_names(const reader::TraceSummary& s) {
  const bool simulated = s.on_simulated_gpu();
  std::string exe = s.process ? s.process->exe.substr(s.process->exe.rfind('/') + 1) : "unknown process";
  if (!s.process) exe += " (metadata lost)";
  sink_.process_name({pid_, static_cast<uint64_t>(pid_)}, simulated ? exe + " (simulated GPU: simgpu)" : exe);
  std::set<int16_t> devices = gpu_sampled_;
  for (const auto& [device, tracks] : gpus_) devices.insert(device);
  for (const int16_t device : devices) {
    std::string label = device < 0 ? "GPU ?" : fmt::format("GPU {}", device);
    for (const auto& d : s.devices)
      if (static_cast<int>(d.index) == device && !d.name.empty()) label += " " + d.name;
    sink_.process_name({gpu_pid(device), gpu_tid(device, 0)}, label);
  }
}

}  // namespace gpuscope::exporter
