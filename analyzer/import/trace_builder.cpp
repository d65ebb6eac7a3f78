#include "trace_builder.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <string>

#include "chunk_builder.h"
#include "correlation_join.h"
#include "record_flags.h"
#include "staged_trace.h"
#include "trace_model.h"

namespace gpuscope::importer {
namespace {

using analyzer::CallKind;

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// What a synchronizing call waits for, from its name (runtime or driver).
fb::SyncKind sync_kind_of(std::string_view name) {
  if (contains(name, "StreamWaitEvent")) return fb::SyncKind::StreamWaitEvent;
  if (contains(name, "StreamQuery")) return fb::SyncKind::StreamQuery;
  if (contains(name, "EventQuery")) return fb::SyncKind::EventQuery;
  if (contains(name, "StreamSynchronize")) return fb::SyncKind::Stream;
  if (contains(name, "EventSynchronize")) return fb::SyncKind::Event;
  if (contains(name, "CtxSynchronize")) return fb::SyncKind::Context;
  if (contains(name, "Synchronize")) return fb::SyncKind::Device;  // cudaDeviceSynchronize, cudaThreadSynchronize
  return fb::SyncKind::Unknown;
}

// The memory an allocation call hands out, from its name.
fb::MemoryKind allocation_kind_of(std::string_view name) {
  if (contains(name, "Managed")) return fb::MemoryKind::Managed;
  if (contains(name, "Host") || contains(name, "HostAlloc")) return fb::MemoryKind::Pinned;
  if (contains(name, "FromPool")) return fb::MemoryKind::Pool;
  return fb::MemoryKind::Device;
}

uint16_t clamp16(uint32_t v) { return static_cast<uint16_t>(std::min<uint32_t>(v, UINT16_MAX)); }

}  // namespace

struct TraceBuilder::Impl {
  Impl() : join(kMaxPendingJoins, [this](uint64_t id, const PendingCall& c, const DeviceWork* w) { add_joined(id, c, w); }) {}

  capture::ChunkBuilder chunk;
  capture::FrameEncoder encoder{3};
  StagedTrace staged;
  CorrelationJoin join;
  // Looked up by string_view: no std::string made per event for a name
  // already interned.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> ids;
  std::vector<std::optional<CallKind>> call_kinds;  // by string id: what the call of that name is
  std::vector<std::pair<uint32_t, std::string>> new_strings;
  std::vector<container::DeviceDescription> devices;
  uint32_t sequence = 1;  // 0 is the metadata frame, written last
  uint64_t first_ns = UINT64_MAX, last_ns = 0;
  uint64_t records = 0, device_records = 0, frames = 0, staged_bytes = 0;

  uint32_t intern(std::string_view text) {
    if (text.empty()) return 0;
    auto it = ids.find(text);
    if (it != ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(ids.size() + 1);
    ids.emplace(std::string(text), id);
    new_strings.emplace_back(id, std::string(text));
    return id;
  }
  // classify_function once per distinct name rather than once per call.
  CallKind call_kind(uint32_t function_id, std::string_view name) {
    if (function_id >= call_kinds.size()) call_kinds.resize(function_id + 1);
    auto& kind = call_kinds[function_id];
    if (!kind) kind = analyzer::classify_function(std::string(name));
    return *kind;
  }
  void span(uint64_t start_ns, uint64_t duration_ns) {
    first_ns = std::min(first_ns, start_ns);
    last_ns = std::max(last_ns, start_ns + duration_ns);
  }
  template <class T> void add(const T& record) {
    chunk.add(record);
    ++records;
    if (chunk.approximate_bytes() >= capture::kChunkTargetBytes) write_chunk();
  }
  void write_chunk() {
    chunk.add_strings(std::move(new_strings));
    new_strings.clear();
    const auto frame = encoder.encode(chunk.build(), sequence);
    if (!frame.empty() && staged.append(frame)) {
      ++sequence;
      ++frames;
      staged_bytes += frame.size();
    }
    chunk.clear();
  }
  // A record of the device's own timeline.
  template <class T> void add_device(const T& record) {
    span(record.start_ns(), record.duration_ns());
    ++device_records;
    add(record);
  }
  void add_joined(uint64_t id, const PendingCall& c, const DeviceWork* w);
};

// The host-side record the capture hooks write for the call: what it
// launched (name, grid) or moved (bytes, direction, kinds), from its device
// record when there was one.
void TraceBuilder::Impl::add_joined(uint64_t id, const PendingCall& c, const DeviceWork* w) {
  const DeviceWork none{c.kind};
  const DeviceWork& d = w != nullptr ? *w : none;
  switch (c.kind) {
    case WorkKind::Kernel:
      add(fb::Kernel(c.start_ns, c.duration_ns, id, d.stream, d.name_id, d.grid[0], clamp16(d.grid[1]),
                     clamp16(d.grid[2]), clamp16(d.block[0]), clamp16(d.block[1]), clamp16(d.block[2]), d.device,
                     d.dynamic_shared_bytes, fb::Source::Host, 0, 0, 0));
      break;
    case WorkKind::Copy:
      add(fb::Copy(c.start_ns, c.duration_ns, id, d.bytes, d.stream, d.direction, d.src_kind, d.dst_kind,
                   fb::Source::Host, d.device, c.async ? container::kCopyAsync : 0));
      break;
    case WorkKind::Memset:
      add(fb::Memset(c.start_ns, c.duration_ns, id, d.bytes, d.stream, d.value, d.dst_kind, fb::Source::Host,
                     d.device));
      break;
  }
}

TraceBuilder::TraceBuilder(ImportSourceInfo info, std::string out_path, bool force)
    : impl_(std::make_unique<Impl>()), info_(std::move(info)) {
  impl_->staged.open(out_path, force, &error_);
}

TraceBuilder::~TraceBuilder() = default;

void TraceBuilder::add_device(container::DeviceDescription device) {
  std::erase_if(impl_->devices, [&](const auto& d) { return d.index == device.index; });
  impl_->devices.push_back(std::move(device));
}

void TraceBuilder::set_thread_name(uint32_t tid, std::string_view name) {
  impl_->add(fb::Marker(0, 0, 0, impl_->intern(name), 0, tid, fb::MarkerKind::ThreadName, 0, 0));
}

void TraceBuilder::add(const HostCall& call) {
  Impl& m = *impl_;
  m.span(call.start_ns, call.duration_ns);
  const uint32_t function_id = m.intern(call.name);
  const uint8_t flags = call.driver ? container::kCallDriverApi : 0;
  m.add(fb::ApiCall(call.start_ns, call.duration_ns, call.correlation, 0, call.tid, 0, call.result, function_id, 0,
                    flags, -1, 0));
  const CallKind kind = m.call_kind(function_id, call.name);
  const PendingCall pending{call.start_ns, call.duration_ns, call.tid, WorkKind::Kernel, contains(call.name, "Async")};
  switch (kind) {
    case CallKind::Sync:
      m.add(fb::Sync(call.start_ns, call.duration_ns, call.correlation, 0, sync_kind_of(call.name), fb::Source::Host,
                     -1, call.result));
      break;
    case CallKind::Alloc:
    case CallKind::Free: {
      const auto op = kind == CallKind::Alloc ? fb::AllocOp::Alloc : fb::AllocOp::Free;
      m.add(fb::Alloc(call.start_ns, call.duration_ns, call.correlation, 0, 0, op, allocation_kind_of(call.name),
                      fb::Source::Host, contains(call.name, "Async") ? 1 : 0, -1, 0));
      break;
    }
    case CallKind::Launch:
      // A graph launch runs what its graph holds; only a kernel launch has
      // one kernel to name.
      if (!contains(call.name, "Graph")) m.join.add_call(call.correlation, pending);
      break;
    case CallKind::Copy: {
      PendingCall copy = pending;
      copy.kind = WorkKind::Copy;
      m.join.add_call(call.correlation, copy);
      break;
    }
    case CallKind::Memset: {
      PendingCall memset = pending;
      memset.kind = WorkKind::Memset;
      m.join.add_call(call.correlation, memset);
      break;
    }
    default:
      break;
  }
}

void TraceBuilder::add(const DeviceKernel& k) {
  Impl& m = *impl_;
  DeviceWork work{WorkKind::Kernel, k.stream, 0, k.device, m.intern(k.name)};
  std::copy(std::begin(k.grid), std::end(k.grid), work.grid);
  std::copy(std::begin(k.block), std::end(k.block), work.block);
  work.dynamic_shared_bytes = k.dynamic_shared_bytes;
  m.add_device(fb::Kernel(k.start_ns, k.duration_ns, k.correlation, k.stream, work.name_id, k.grid[0],
                          clamp16(k.grid[1]), clamp16(k.grid[2]), clamp16(k.block[0]), clamp16(k.block[1]),
                          clamp16(k.block[2]), k.device, k.dynamic_shared_bytes, fb::Source::Device, 0, 0, 0));
  if (k.correlation != 0) m.join.add_work(k.correlation, work);
}

void TraceBuilder::add(const DeviceCopy& c) {
  Impl& m = *impl_;
  m.add_device(fb::Copy(c.start_ns, c.duration_ns, c.correlation, c.bytes, c.stream, c.direction, c.src_kind,
                        c.dst_kind, fb::Source::Device, c.device, 0));
  DeviceWork work{WorkKind::Copy, c.stream, c.bytes, c.device};
  work.direction = c.direction;
  work.src_kind = c.src_kind;
  work.dst_kind = c.dst_kind;
  if (c.correlation != 0) m.join.add_work(c.correlation, work);
}

void TraceBuilder::add(const DeviceMemset& s) {
  Impl& m = *impl_;
  m.add_device(fb::Memset(s.start_ns, s.duration_ns, s.correlation, s.bytes, s.stream, s.value, s.kind,
                          fb::Source::Device, s.device));
  DeviceWork work{WorkKind::Memset, s.stream, s.bytes, s.device};
  work.value = s.value;
  work.dst_kind = s.kind;
  if (s.correlation != 0) m.join.add_work(s.correlation, work);
}

void TraceBuilder::add(const DeviceSync& s) {
  impl_->add_device(fb::Sync(s.start_ns, s.duration_ns, s.correlation, s.stream, s.kind, fb::Source::Device, s.device, 0));
}

// A closed range: the source knows its start and duration, so there is
// nothing to pair (push/pop pairing would depend on the file's order when
// a parent and a child start at the same instant).
void TraceBuilder::add(const HostRange& r) {
  Impl& m = *impl_;
  m.span(r.start_ns, r.duration_ns);
  m.add(fb::Marker(r.start_ns, r.duration_ns, 0, m.intern(r.name), m.intern(r.domain), r.tid, fb::MarkerKind::Range, 0,
                   0));
}

void TraceBuilder::add(const AllocatorEvent& e) {
  Impl& m = *impl_;
  m.span(e.time_ns, 0);
  const auto op = e.bytes >= 0 ? fb::AllocOp::Alloc : fb::AllocOp::Free;
  const uint64_t bytes = e.bytes >= 0 ? static_cast<uint64_t>(e.bytes) : static_cast<uint64_t>(-(e.bytes + 1)) + 1;
  m.add(fb::Alloc(e.time_ns, 0, 0, e.address, bytes, op, e.kind, fb::Source::Host, 0, e.device, 0));
}

int TraceBuilder::finish(bool complete, const std::string& damage) {
  if (!error_.empty()) return -1;
  Impl& m = *impl_;
  m.join.flush();
  counts_.unjoined = m.join.calls_without_work();
  counts_.records = m.records;
  const uint64_t first = m.first_ns == UINT64_MAX ? 0 : m.first_ns;
  if (process_.start_monotonic_ns == 0) process_.start_monotonic_ns = first;
  // Timestamps past 2001 are wall-clock already (epoch-based exports).
  constexpr uint64_t kWallClockNs = uint64_t{1'000'000'000} * 1'000'000'000;
  if (process_.start_realtime_ns == 0)
    process_.start_realtime_ns = first >= kWallClockNs ? first : (realtime_base_ns_ != 0 ? realtime_base_ns_ + first : 0);

  container::DeviceCollectionData collection;
  collection.state = static_cast<uint8_t>(m.device_records > 0 ? fb::DeviceCollectionState::Active
                                                               : fb::DeviceCollectionState::Failed);
  collection.reason = m.device_records > 0 ? "imported (" + info_.format + ")"
                                           : "the imported file holds no device activity (" + info_.format + ")";
  collection.records = m.device_records;
  collection.uncorrelated = m.join.work_without_call();
  m.chunk.set_device_collection(collection);
  capture::TotalsInfo totals;
  totals.end_monotonic_ns = std::max(m.last_ns, first);
  totals.message = complete ? "" : damage;
  totals.events_written = m.records + m.chunk.record_count();
  totals.frames_written = m.frames + 1;  // the metadata frame comes first
  m.chunk.set_drops({});
  m.chunk.set_totals(totals);
  m.write_chunk();

  capture::ChunkBuilder head;
  head.set_metadata(process_);
  for (auto& d : m.devices) head.add_device(d);
  head.set_import_source(container::ImportSourceData{info_.format, info_.path, info_.producer, info_.notes,
                                                     counts_.events, counts_.skipped, counts_.unjoined,
                                                     counts_.out_of_range, complete, damage, info_.mid_run});
  const auto first_frame = m.encoder.encode(head.build(), 0);
  if (first_frame.empty()) {
    error_ = std::string("compressing the imported trace failed: ") + m.encoder.last_error();
    return -1;
  }
  const int fd = m.staged.finish(first_frame, &error_);
  return fd;
}

}  // namespace gpuscope::importer
