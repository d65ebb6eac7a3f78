// The timeline walk: typed-record arguments, device tracks, GPU counters
// (timeline_walk.h, docs/export.md).
#include <algorithm>

#include "call_sites.h"
#include "timeline_walk.h"

namespace gpuscope::exporter {
namespace {

constexpr uint32_t bit(fb::GpuSampleField f) { return static_cast<uint32_t>(f); }

// Streams get lanes (tids 1..); these keys name the rows that are not streams.
constexpr uint64_t kSyncRow = ~uint64_t{0};


}  // namespace

// ---- typed records ----

void TimelineWalk::typed_args(const TypedRecord& r) {
  Args& a = args_;
  if (const auto* c = std::get_if<fb::Copy>(&r)) {
    a.add_uint("bytes", c->bytes());
    a.add_text("copy_kind", fb::EnumNameCopyDirection(c->direction()));
    a.add_text("src", fb::EnumNameMemoryKind(c->src_kind()));
    a.add_text("dst", fb::EnumNameMemoryKind(c->dst_kind()));
    a.add_bool("async", (c->flags() & container::kCopyAsync) != 0);
    if ((c->flags() & container::kCopyPrefetch) != 0) a.add_bool("prefetch", true);
  } else if (const auto* m = std::get_if<fb::Memset>(&r)) {
    a.add_uint("bytes", m->bytes());
    a.add_int("value", m->value());
    a.add_text("memory", fb::EnumNameMemoryKind(m->memory_kind()));
  } else if (const auto* k = std::get_if<fb::Kernel>(&r)) {
    a.add_text("kernel", name(k->name_id()).text);
    a.add_dims("grid", k->grid_x(), k->grid_y(), k->grid_z());
    a.add_dims("block", k->block_x(), k->block_y(), k->block_z());
    a.add_uint("dynamic_shared_bytes", k->dynamic_shared_bytes());
  } else if (const auto* s = std::get_if<fb::Sync>(&r)) {
    a.add_text("sync", fb::EnumNameSyncKind(s->kind()));
    a.add_hex("object", s->object());
  } else if (const auto* al = std::get_if<fb::Alloc>(&r)) {
    a.add_text("op", fb::EnumNameAllocOp(al->op()));
    a.add_uint("bytes", al->bytes());
    // cuMemCreate / cuMemRelease name a physical allocation's handle.
    if ((al->flags() & container::kAllocPhysical) != 0) a.add_hex("physical_handle", al->address());
    else a.add_hex("address", al->address());
    a.add_text("memory", fb::EnumNameMemoryKind(al->memory_kind()));
  } else if (const auto* g = std::get_if<fb::GraphLaunch>(&r)) {
    graph_args(*g);
  }
}

void TimelineWalk::graph_args(const fb::GraphLaunch& g) {
  Args& a = args_;
  a.add_hex("graph_exec", g.graph_exec());
  if ((g.flags() & container::kGraphContentsUnknown) != 0) {
    a.add_text("graph_contents", "unknown");
    return;
  }
  a.add_uint("graph_kernels", g.kernels());
  a.add_uint("graph_copies", g.copies());
  a.add_uint("graph_memsets", g.memsets());
  a.add_uint("graph_other_nodes", g.other_nodes());
  if ((g.flags() & container::kGraphHasConditional) != 0) a.add_bool("graph_conditional", true);
}

// A typed record whose call was dropped or not found: an instant on a row
// of its own, so that it is still in the timeline.
void TimelineWalk::unmatched_typed(const TypedRecord& r) {
  ++stats_.unmatched_records;
  static constexpr const char* kNames[] = {"copy", "memset", "kernel launch", "sync", "alloc", "graph launch"};
  static_assert(std::size(kNames) == std::variant_size_v<TypedRecord>);
  const uint64_t start = std::visit([](const auto& rec) { return rec.start_ns(); }, r);
  const uint64_t tid = synthetic_track("host records without their API call");
  fresh_args().add_uint("correlation", std::visit([](const auto& rec) { return rec.correlation_id(); }, r));
  typed_args(r);
  sink_.instant({pid_, tid}, {kNames[r.index()]}, "cuda", start, args_);
}

uint64_t TimelineWalk::synthetic_track(const std::string& track_name) {
  auto it = synthetic_tids_.find(track_name);
  if (it != synthetic_tids_.end()) return it->second;
  const uint64_t tid = kSyntheticTidBase + synthetic_tids_.size();
  synthetic_tids_.emplace(track_name, tid);
  sink_.thread_name({pid_, tid}, track_name);
  return tid;
}

void TimelineWalk::live_memory(const fb::Alloc& a) {
  if (!live_.apply(a)) return;
  // Live from the end of the allocating call, gone from the start of the freeing one.
  const uint64_t at = a.op() == fb::AllocOp::Alloc ? a.start_ns() + a.duration_ns() : a.start_ns();
  fresh_args().add_uint("bytes", live_.live_bytes());
  sink_.counter({pid_, static_cast<uint64_t>(pid_)}, {"device memory (live)"}, at, args_);  // the main thread's
}

// ---- device ----

namespace {
int64_t gpu_ordinal(int16_t device) { return device < 0 || device > 0xffe ? 0xfff : device; }
}  // namespace

int64_t TimelineWalk::gpu_pid(int16_t device) { return kGpuPidBase + gpu_ordinal(device); }

uint64_t TimelineWalk::gpu_tid(int16_t device, uint64_t row) {
  return kGpuTidBase + (static_cast<uint64_t>(gpu_ordinal(device)) << 16) + (row & 0xffff);
}

// The tid of the lane of `stream` where [start, end) fits; names new lanes.
uint64_t TimelineWalk::stream_track(int16_t device, uint64_t stream, uint64_t start, uint64_t end,
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
    sink_.thread_name({gpu_pid(device), it->second}, row);
  }
  return it->second;
}

Args& TimelineWalk::device_args(uint64_t stream, uint64_t correlation) {
  Args& a = fresh_args();
  a.add_uint("correlation", correlation);
  if (stream != kSyncRow) a.add_hex("stream", stream);
  return a;
}

// On the lane of its stream; the arguments are in args_ (device_args), and
// a record with a correlation id ends the flow from its call.
void TimelineWalk::device_span(Label label, const char* cat, int16_t device, uint64_t stream, uint64_t start,
                               uint64_t duration, uint64_t correlation) {
  uint64_t placed = start;
  const uint64_t end = start + duration;
  const uint64_t tid = stream_track(device, stream, start, end, &placed);
  Flow flow;
  if (correlation != 0 && stream != kSyncRow) flow = {Flow::Kind::In, correlation, placed};
  sink_.slice({gpu_pid(device), tid}, label, cat, placed, end - placed, args_, flow);
}

void TimelineWalk::device_kernel(const fb::Kernel& k) {
  Args& a = device_args(k.stream(), k.correlation_id());
  a.add_dims("grid", k.grid_x(), k.grid_y(), k.grid_z());
  a.add_dims("block", k.block_x(), k.block_y(), k.block_z());
  a.add_uint("dynamic_shared_bytes", k.dynamic_shared_bytes());
  device_span(name(k.name_id()), "gpu.kernel", k.device(), k.stream(), k.start_ns(), k.duration_ns(),
              k.correlation_id());
}

void TimelineWalk::device_copy(const fb::Copy& c) {
  Args& a = device_args(c.stream(), c.correlation_id());
  a.add_uint("bytes", c.bytes());
  a.add_text("src", fb::EnumNameMemoryKind(c.src_kind()));
  a.add_text("dst", fb::EnumNameMemoryKind(c.dst_kind()));
  const std::string label = fmt::format("memcpy {}", fb::EnumNameCopyDirection(c.direction()));
  device_span({label}, "gpu.copy", c.device(), c.stream(), c.start_ns(), c.duration_ns(), c.correlation_id());
}

void TimelineWalk::device_memset(const fb::Memset& m) {
  Args& a = device_args(m.stream(), m.correlation_id());
  a.add_uint("bytes", m.bytes());
  a.add_int("value", m.value());
  device_span({"memset"}, "gpu.memset", m.device(), m.stream(), m.start_ns(), m.duration_ns(), m.correlation_id());
}

void TimelineWalk::device_sync(const fb::Sync& s) {
  device_args(kSyncRow, s.correlation_id()).add_hex("object", s.object());
  const std::string label = fmt::format("sync {}", fb::EnumNameSyncKind(s.kind()));
  device_span({label}, "gpu.sync", s.device(), kSyncRow, s.start_ns(), s.duration_ns(), s.correlation_id());
}

void TimelineWalk::device_alloc(const fb::Alloc& a) {
  Args& args = fresh_args();
  args.add_text("op", fb::EnumNameAllocOp(a.op()));
  args.add_uint("bytes", a.bytes());
  args.add_hex("address", a.address());
  sink_.instant({gpu_pid(a.device()), gpu_tid(a.device(), 0)}, {a.op() == fb::AllocOp::Free ? "free" : "alloc"},
                "gpu.memory", a.start_ns(), args);
}

void TimelineWalk::gpu_sample(const fb::GpuSample& g) {
  const auto device = static_cast<int16_t>(g.device());
  gpu_sampled_.insert(device);
  const Track track{gpu_pid(device), gpu_tid(device, 0)};
  const uint32_t v = g.valid();
  const auto has = [&](fb::GpuSampleField f) { return (v & bit(f)) != 0; };
  const auto counter = [&](const char* label) {
    if (!args_.empty()) sink_.counter(track, {label}, g.start_ns(), args_);
  };
  Args& a = fresh_args();
  if (has(fb::GpuSampleField::Utilization)) a.add_uint("gpu", g.gpu_util_pct()), a.add_uint("memory", g.memory_util_pct());
  if (has(fb::GpuSampleField::SmUtilization)) a.add_uint("sm", g.sm_util_pct());
  if (has(fb::GpuSampleField::DramBandwidth)) a.add_uint("dram_bw", g.dram_bw_util_pct());
  counter("utilization %");
  if (has(fb::GpuSampleField::MemoryUsed)) fresh_args().add_uint("used", g.memory_used_bytes()), counter("memory used (bytes)");
  if (has(fb::GpuSampleField::PcieThroughput)) {
    fresh_args().add_uint("tx", g.pcie_tx_kbps());
    args_.add_uint("rx", g.pcie_rx_kbps());
    counter("PCIe (KB/s)");
  }
  if (has(fb::GpuSampleField::Clocks)) {
    fresh_args().add_uint("sm", g.sm_clock_mhz());
    args_.add_uint("memory", g.memory_clock_mhz());
    counter("clocks (MHz)");
  }
  if (has(fb::GpuSampleField::Power)) fresh_args().add_milli("power", g.power_mw()), counter("power (W)");
  if (has(fb::GpuSampleField::Temperature)) fresh_args().add_int("temperature", g.temperature_c()), counter("temperature (C)");
}

}  // namespace gpuscope::exporter
