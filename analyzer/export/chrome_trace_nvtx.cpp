// Chrome trace export: NVTX ranges, capture windows, and the end of the
// document (process names, metadata). docs/export.md.
#include <algorithm>
#include <set>

#include "call_sites.h"
#include "chrome_trace_internal.h"
#include "json_escape.h"

namespace gpuscope::exporter {
namespace {

constexpr size_t kMaxNvtxDepth = 1024;
constexpr size_t kMaxOpenAsync = size_t{1} << 20;
constexpr uint64_t kIdMask = (uint64_t{1} << 53) - 1;  // exact in JavaScript numbers

}  // namespace

void ChromeTraceWriter::marker(const fb::Marker& m) {
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
    case fb::MarkerKind::ThreadName:
      if (m.name_id() != 0) metadata_event("thread_name", pid_, m.tid(), summary_.current().name_of(m.name_id()));
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
      begin(name(m.name_id()), 'i', m.start_ns(), pid_, m.tid());
      out_.put(",\"s\":\"t\",\"cat\":\"nvtx\"");
      if (m.domain_id() != 0) {
        out_.put(",\"args\":{\"domain\":");
        out_.put(name(m.domain_id()));
        out_.put('}');
      }
      end_event();
  }
}

// Push/pop ranges get a row per thread and domain next to the thread's CUDA
// calls (as Nsight Systems shows them): pairs of one domain always nest,
// but two domains, or a range and a call, need not.
ChromeTraceWriter::NvtxTrack& ChromeTraceWriter::nvtx_track(uint32_t tid, uint32_t domain) {
  auto [it, fresh] = nvtx_.try_emplace({tid, domain});
  if (fresh) {
    const std::string d = domain == 0 ? "" : summary_.current().name_of(domain) + " ";
    it->second.tid = synthetic_track(fmt::format("NVTX {}(thread {})", d, tid));
  }
  return it->second;
}

void ChromeTraceWriter::nvtx_push(const fb::Marker& m) {
  NvtxTrack& t = nvtx_track(m.tid(), m.domain_id());
  if (t.open.size() >= kMaxNvtxDepth) {
    ++t.too_deep;  // its pop is dropped too
    return;
  }
  t.open.push_back({m.start_ns(), m.name_id()});
}

void ChromeTraceWriter::nvtx_pop(const fb::Marker& m) {
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

void ChromeTraceWriter::range_span(NvtxTrack& t, const OpenRange& r, uint64_t end, uint32_t domain,
                                   bool unterminated) {
  uint64_t start = r.start_ns;
  const auto placed = t.guard.place(&start, end);
  if (placed == NestGuard::Placed::Rejected) {
    ++stats_.unplaced;
    begin(name(r.name_id), 'i', r.start_ns, pid_, t.tid);
    out_.put(",\"s\":\"t\"");
  } else {
    if (placed == NestGuard::Placed::Clamped) ++stats_.clamped;
    begin(name(r.name_id), 'X', start, pid_, t.tid);
    put_dur(end - start);
  }
  out_.put(",\"cat\":\"nvtx\",\"args\":{");
  out_.format("\"depth\":{}", t.open.size());
  if (domain != 0) {
    out_.put(",\"domain\":");
    out_.put(name(domain));
  }
  if (unterminated) out_.put(",\"unterminated\":true");
  out_.put('}');
  end_event();
}

void ChromeTraceWriter::nvtx_start(const fb::Marker& m) {
  if (async_.size() >= kMaxOpenAsync) return;
  async_[m.correlation_id()] = OpenAsync{m.start_ns(), m.name_id(), m.domain_id(), m.tid()};
}

void ChromeTraceWriter::nvtx_end(const fb::Marker& m) {
  auto it = async_.find(m.correlation_id());
  if (it == async_.end()) {
    ++stats_.unmatched_pops;
    return;
  }
  async_range(m.correlation_id(), it->second, std::max(it->second.start_ns, m.start_ns()), false);
  async_.erase(it);
}

// Start/end ranges may cross threads and overlap in any way: async events
// ("b"/"e", matched by category, id and name) on rows of their own.
void ChromeTraceWriter::async_range(uint64_t id, const OpenAsync& r, uint64_t end, bool unterminated) {
  for (const char phase : {'b', 'e'}) {
    begin(name(r.name_id), phase, phase == 'b' ? r.start_ns : end, pid_, r.tid);
    out_.format(",\"cat\":\"nvtx\",\"id\":{}", id & kIdMask);
    if (phase == 'b') {
      out_.format(",\"args\":{{\"range_id\":{}", id);
      if (r.domain_id != 0) {
        out_.put(",\"domain\":");
        out_.put(name(r.domain_id));
      }
      if (unterminated) out_.put(",\"unterminated\":true");
      out_.put('}');
    }
    end_event();
  }
}

// Ranges still open when the trace ends (the process died, or never
// popped) end there, flagged, innermost first so they nest.
void ChromeTraceWriter::close_nvtx(uint64_t end_ns) {
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

// Windows are disjoint, but a provisional window can outlast a later one
// only through damage: merge overlapping ones.
void ChromeTraceWriter::write_capture_windows() {
  if (capture_windows_.empty()) return;
  const uint64_t tid = synthetic_track("capture windows");
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& [start, dur] : capture_windows_) {
    if (!merged.empty() && start <= merged.back().second) merged.back().second = std::max(merged.back().second, start + dur);
    else merged.emplace_back(start, start + dur);
  }
  for (const auto& [a, b] : merged) {
    begin("\"capture window\"", 'X', a, pid_, tid);
    put_dur(b - a);
    out_.put(",\"cat\":\"gpuscope\"");
    end_event();
  }
}

void ChromeTraceWriter::write_process_names(const reader::TraceSummary& s) {
  const bool simulated = s.on_simulated_gpu();
  std::string exe = s.process ? s.process->exe.substr(s.process->exe.rfind('/') + 1) : "unknown process";
  if (!s.process) exe += " (metadata lost)";
  metadata_event("process_name", pid_, static_cast<uint64_t>(pid_), simulated ? exe + " (simulated GPU: simgpu)" : exe);
  std::set<int16_t> devices = gpu_sampled_;
  for (const auto& [device, tracks] : gpus_) devices.insert(device);
  for (const int16_t device : devices) {
    std::string label = device < 0 ? "GPU ?" : fmt::format("GPU {}", device);
    for (const auto& d : s.devices)
      if (static_cast<int>(d.index) == device && !d.name.empty()) label += " " + d.name;
    metadata_event("process_name", gpu_pid(device), gpu_tid(device, 0), label);
  }
}

}  // namespace gpuscope::exporter
