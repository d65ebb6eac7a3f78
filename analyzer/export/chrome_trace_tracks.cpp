// Chrome trace export: typed-record arguments, device tracks, NVTX, GPU
// counters, capture windows and the end of the document (docs/export.md).
#include <algorithm>

#include "call_sites.h"
#include "chrome_trace_internal.h"
#include "json_escape.h"

namespace gpuscope::exporter {
namespace {

constexpr uint32_t bit(fb::GpuSampleField f) { return static_cast<uint32_t>(f); }

// Streams get lanes (tids 1..); these keys name the rows that are not streams.
constexpr uint64_t kSyncRow = ~uint64_t{0};


}  // namespace

// ---- typed records ----

void ChromeTraceWriter::typed_args(const TypedRecord& r) {
  if (const auto* c = std::get_if<fb::Copy>(&r)) {
    out_.format(",\"bytes\":{},\"copy_kind\":\"{}\",\"src\":\"{}\",\"dst\":\"{}\",\"async\":{}", c->bytes(),
                fb::EnumNameCopyDirection(c->direction()), fb::EnumNameMemoryKind(c->src_kind()),
                fb::EnumNameMemoryKind(c->dst_kind()), (c->flags() & container::kCopyAsync) != 0);
    if ((c->flags() & container::kCopyPrefetch) != 0) out_.put(",\"prefetch\":true");
  } else if (const auto* m = std::get_if<fb::Memset>(&r)) {
    out_.format(",\"bytes\":{},\"value\":{},\"memory\":\"{}\"", m->bytes(), m->value(),
                fb::EnumNameMemoryKind(m->memory_kind()));
  } else if (const auto* k = std::get_if<fb::Kernel>(&r)) {
    out_.put(",\"kernel\":");
    out_.put(name(k->name_id()));
    out_.format(",\"grid\":\"{}x{}x{}\",\"block\":\"{}x{}x{}\",\"dynamic_shared_bytes\":{}", k->grid_x(),
                k->grid_y(), k->grid_z(), k->block_x(), k->block_y(), k->block_z(), k->dynamic_shared_bytes());
  } else if (const auto* s = std::get_if<fb::Sync>(&r)) {
    out_.format(",\"sync\":\"{}\",\"object\":\"0x{:x}\"", fb::EnumNameSyncKind(s->kind()), s->object());
  } else if (const auto* a = std::get_if<fb::Alloc>(&r)) {
    out_.format(",\"op\":\"{}\",\"bytes\":{},\"address\":\"0x{:x}\",\"memory\":\"{}\"", fb::EnumNameAllocOp(a->op()),
                a->bytes(), a->address(), fb::EnumNameMemoryKind(a->memory_kind()));
  } else if (const auto* g = std::get_if<fb::GraphLaunch>(&r)) {
    out_.format(",\"graph_exec\":\"0x{:x}\"", g->graph_exec());
    if ((g->flags() & container::kGraphContentsUnknown) != 0) {
      out_.put(",\"graph_contents\":\"unknown\"");
      return;
    }
    out_.format(",\"graph_kernels\":{},\"graph_copies\":{},\"graph_memsets\":{},\"graph_other_nodes\":{}", g->kernels(),
                g->copies(), g->memsets(), g->other_nodes());
    if ((g->flags() & container::kGraphHasConditional) != 0) out_.put(",\"graph_conditional\":true");
  }
}

// A typed record whose call was dropped or not found: an instant on a row
// of its own, so that it is still in the timeline.
void ChromeTraceWriter::unmatched_typed(const TypedRecord& r) {
  ++stats_.unmatched_records;
  static constexpr const char* kNames[] = {"\"copy\"",  "\"memset\"", "\"kernel launch\"",
                                           "\"sync\"",  "\"alloc\"",  "\"graph launch\""};
  static_assert(std::size(kNames) == std::variant_size_v<TypedRecord>);
  const uint64_t start = std::visit([](const auto& rec) { return rec.start_ns(); }, r);
  const uint64_t tid = synthetic_track("host records without their API call");
  begin(kNames[r.index()], 'i', start, pid_, tid);
  out_.put(",\"s\":\"t\",\"cat\":\"cuda\",\"args\":{");
  out_.format("\"correlation\":{}", std::visit([](const auto& rec) { return rec.correlation_id(); }, r));
  typed_args(r);
  out_.put('}');
  end_event();
}

uint64_t ChromeTraceWriter::synthetic_track(const std::string& track_name) {
  auto it = synthetic_tids_.find(track_name);
  if (it != synthetic_tids_.end()) return it->second;
  const uint64_t tid = kSyntheticTidBase + synthetic_tids_.size();
  synthetic_tids_.emplace(track_name, tid);
  metadata_event("thread_name", pid_, tid, track_name);
  return tid;
}

void ChromeTraceWriter::live_memory(const fb::Alloc& a) {
  if (!live_.apply(a)) return;
  // Live from the end of the allocating call, gone from the start of the freeing one.
  const uint64_t at = a.op() == fb::AllocOp::Alloc ? a.start_ns() + a.duration_ns() : a.start_ns();
  begin("\"device memory (live)\"", 'C', at, pid_, static_cast<uint64_t>(pid_));  // the main thread's
  out_.format(",\"args\":{{\"bytes\":{}}}", live_.live_bytes());
  end_event();
}

// ---- device ----

namespace {
int64_t gpu_ordinal(int16_t device) { return device < 0 || device > 0xffe ? 0xfff : device; }
}  // namespace

int64_t ChromeTraceWriter::gpu_pid(int16_t device) { return kGpuPidBase + gpu_ordinal(device); }

uint64_t ChromeTraceWriter::gpu_tid(int16_t device, uint64_t row) {
  return kGpuTidBase + (static_cast<uint64_t>(gpu_ordinal(device)) << 16) + (row & 0xffff);
}

// The tid of the lane of `stream` where [start, end) fits; names new lanes.
uint64_t ChromeTraceWriter::stream_track(int16_t device, uint64_t stream, uint64_t start, uint64_t end,
                                         uint64_t* placed_start) {
  GpuTracks& g = gpus_[device];
  const StreamLanes::Slot slot = g.streams[stream].place(start, end);
  *placed_start = slot.start;
  if (slot.lane != 0) ++stats_.extra_lanes;
  if (slot.clamped) ++stats_.clamped;
  auto [it, fresh] = g.tids.try_emplace({stream, slot.lane}, gpu_tid(device, g.tids.size() + 1));
  if (fresh) {
    std::string row = stream == kSyncRow ? "synchronization"
                      : stream == 0      ? "default stream"
                                         : fmt::format("stream 0x{:x}", stream);
    if (slot.lane != 0) row += fmt::format(" (overlap {})", slot.lane);
    metadata_event("thread_name", gpu_pid(device), it->second, row);
  }
  return it->second;
}

void ChromeTraceWriter::device_span(std::string_view name_json, const char* cat, int16_t device, uint64_t stream,
                                    uint64_t start, uint64_t duration, uint64_t correlation) {
  uint64_t placed = start;
  const uint64_t end = start + duration;
  const uint64_t tid = stream_track(device, stream, start, end, &placed);
  last_tid_ = tid;
  last_start_ = placed;
  begin(name_json, 'X', placed, gpu_pid(device), tid);
  put_dur(end - placed);
  out_.format(",\"cat\":\"{}\",\"args\":{{\"correlation\":{}", cat, correlation);
  if (stream != kSyncRow) out_.format(",\"stream\":\"0x{:x}\"", stream);
}

void ChromeTraceWriter::device_kernel(const fb::Kernel& k) {
  device_span(name(k.name_id()), "gpu.kernel", k.device(), k.stream(), k.start_ns(), k.duration_ns(),
              k.correlation_id());
  out_.format(",\"grid\":\"{}x{}x{}\",\"block\":\"{}x{}x{}\",\"dynamic_shared_bytes\":{}}}", k.grid_x(), k.grid_y(),
              k.grid_z(), k.block_x(), k.block_y(), k.block_z(), k.dynamic_shared_bytes());
  end_event();
  if (k.correlation_id() != 0) flow('f', k.correlation_id(), last_start_, gpu_pid(k.device()), last_tid_);
}

void ChromeTraceWriter::device_copy(const fb::Copy& c) {
  const std::string label = fmt::format("\"memcpy {}\"", fb::EnumNameCopyDirection(c.direction()));
  device_span(label, "gpu.copy", c.device(), c.stream(), c.start_ns(), c.duration_ns(), c.correlation_id());
  out_.format(",\"bytes\":{},\"src\":\"{}\",\"dst\":\"{}\"}}", c.bytes(), fb::EnumNameMemoryKind(c.src_kind()),
              fb::EnumNameMemoryKind(c.dst_kind()));
  end_event();
  if (c.correlation_id() != 0) flow('f', c.correlation_id(), last_start_, gpu_pid(c.device()), last_tid_);
}

void ChromeTraceWriter::device_memset(const fb::Memset& m) {
  device_span("\"memset\"", "gpu.memset", m.device(), m.stream(), m.start_ns(), m.duration_ns(), m.correlation_id());
  out_.format(",\"bytes\":{},\"value\":{}}}", m.bytes(), m.value());
  end_event();
  if (m.correlation_id() != 0) flow('f', m.correlation_id(), last_start_, gpu_pid(m.device()), last_tid_);
}

void ChromeTraceWriter::device_sync(const fb::Sync& s) {
  const std::string label = fmt::format("\"sync {}\"", fb::EnumNameSyncKind(s.kind()));
  device_span(label, "gpu.sync", s.device(), kSyncRow, s.start_ns(), s.duration_ns(), s.correlation_id());
  out_.format(",\"object\":\"0x{:x}\"}}", s.object());
  end_event();
}

void ChromeTraceWriter::device_alloc(const fb::Alloc& a) {
  begin(a.op() == fb::AllocOp::Free ? "\"free\"" : "\"alloc\"", 'i', a.start_ns(), gpu_pid(a.device()), gpu_tid(a.device(), 0));
  out_.format(",\"s\":\"t\",\"cat\":\"gpu.memory\",\"args\":{{\"op\":\"{}\",\"bytes\":{},\"address\":\"0x{:x}\"}}",
              fb::EnumNameAllocOp(a.op()), a.bytes(), a.address());
  end_event();
}

void ChromeTraceWriter::gpu_sample(const fb::GpuSample& g) {
  const auto device = static_cast<int16_t>(g.device());
  gpu_sampled_.insert(device);
  const int64_t pid = gpu_pid(device);
  const uint32_t v = g.valid();
  const auto counter = [&](const char* name_json, auto&& args) {
    begin(name_json, 'C', g.start_ns(), pid, gpu_tid(device, 0));
    out_.put(",\"args\":{");
    args();
    out_.put('}');
    end_event();
  };
  if (v & (bit(fb::GpuSampleField::Utilization) | bit(fb::GpuSampleField::SmUtilization) |
           bit(fb::GpuSampleField::DramBandwidth)))
    counter("\"utilization %\"", [&] {
      const char* sep = "";
      if (v & bit(fb::GpuSampleField::Utilization)) {
        out_.format("\"gpu\":{},\"memory\":{}", g.gpu_util_pct(), g.memory_util_pct());
        sep = ",";
      }
      if (v & bit(fb::GpuSampleField::SmUtilization)) out_.format("{}\"sm\":{}", std::exchange(sep, ","), g.sm_util_pct());
      if (v & bit(fb::GpuSampleField::DramBandwidth)) out_.format("{}\"dram_bw\":{}", sep, g.dram_bw_util_pct());
    });
  if (v & bit(fb::GpuSampleField::MemoryUsed))
    counter("\"memory used (bytes)\"", [&] { out_.format("\"used\":{}", g.memory_used_bytes()); });
  if (v & bit(fb::GpuSampleField::PcieThroughput))
    counter("\"PCIe (KB/s)\"", [&] { out_.format("\"tx\":{},\"rx\":{}", g.pcie_tx_kbps(), g.pcie_rx_kbps()); });
  if (v & bit(fb::GpuSampleField::Clocks))
    counter("\"clocks (MHz)\"", [&] { out_.format("\"sm\":{},\"memory\":{}", g.sm_clock_mhz(), g.memory_clock_mhz()); });
  if (v & bit(fb::GpuSampleField::Power))
    counter("\"power (W)\"", [&] { out_.format("\"power\":{}.{:03}", g.power_mw() / 1000, g.power_mw() % 1000); });
  if (v & bit(fb::GpuSampleField::Temperature))
    counter("\"temperature (C)\"", [&] { out_.format("\"temperature\":{}", g.temperature_c()); });
}

}  // namespace gpuscope::exporter
