#include "kineto_events.h"

#include <simdjson.h>

#include <cmath>
#include <map>
#include <optional>

#include "kineto_fields.h"

namespace gpuscope::importer {
namespace {

namespace od = simdjson::ondemand;

bool is_any(std::string_view s, std::initializer_list<std::string_view> options) {
  for (auto o : options)
    if (s == o) return true;
  return false;
}

// "Memcpy HtoD (Pageable -> Device)": the direction and the memory kinds.
fb::MemoryKind memory_kind_named(std::string_view s) {
  if (s.starts_with("Pageable")) return fb::MemoryKind::Pageable;
  if (s.starts_with("Pinned")) return fb::MemoryKind::Pinned;
  if (s.starts_with("Device")) return fb::MemoryKind::Device;
  if (s.starts_with("Array")) return fb::MemoryKind::Array;
  if (s.starts_with("Managed")) return fb::MemoryKind::Managed;
  return fb::MemoryKind::Unknown;
}

void parse_copy_name(std::string_view name, DeviceCopy* c) {
  using D = fb::CopyDirection;
  if (name.find("HtoD") != std::string_view::npos) c->direction = D::HostToDevice;
  else if (name.find("DtoH") != std::string_view::npos) c->direction = D::DeviceToHost;
  else if (name.find("DtoD") != std::string_view::npos) c->direction = D::DeviceToDevice;
  else if (name.find("HtoH") != std::string_view::npos) c->direction = D::HostToHost;
  else if (name.find("PtoP") != std::string_view::npos) c->direction = D::PeerToPeer;
  const size_t open = name.find('('), arrow = name.find("->");
  if (open == std::string_view::npos || arrow == std::string_view::npos || arrow < open) return;
  c->src_kind = memory_kind_named(name.substr(open + 1));
  size_t dst = arrow + 2;
  while (dst < name.size() && name[dst] == ' ') ++dst;
  c->dst_kind = memory_kind_named(name.substr(dst));
}

int16_t device_of(const KinetoEvent& e) {
  const int64_t d = e.args.device >= 0 ? e.args.device : e.pid;
  return d >= 0 && d < INT16_MAX ? static_cast<int16_t>(d) : -1;
}
uint64_t stream_of(const KinetoEvent& e) {
  return static_cast<uint64_t>(e.args.stream >= 0 ? e.args.stream : std::max<int64_t>(e.tid, 0));
}
uint64_t correlation_of(const KinetoEvent& e) { return e.args.correlation > 0 ? e.args.correlation : 0; }
uint32_t tid_of(const KinetoEvent& e) { return static_cast<uint32_t>(e.tid); }

}  // namespace

struct KinetoEventMapper::Impl {
  explicit Impl(TraceBuilder& b) : builder(b) {}
  TraceBuilder& builder;
  od::parser parser;
  KinetoEvent event;
  uint64_t events = 0;
  int64_t main_pid = -1;
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;

  void map(const KinetoEvent& e);
  void map_metadata(const KinetoEvent& e);
  void map_device(const KinetoEvent& e);
  bool map_range(const KinetoEvent& e);
};

KinetoEventMapper::KinetoEventMapper(TraceBuilder& builder) : impl_(std::make_unique<Impl>(builder)) {}
KinetoEventMapper::~KinetoEventMapper() = default;
uint64_t KinetoEventMapper::events() const { return impl_->events; }

bool KinetoEventMapper::add_event(std::string_view element, std::string* error) {
  Impl& m = *impl_;
  if (!parse_kineto_event(m.parser, element, &m.event, error)) return false;
  ++m.events;
  m.builder.count_event();
  m.map(m.event);
  return true;
}

void KinetoEventMapper::Impl::map(const KinetoEvent& e) {
  if (e.ph == "M") return map_metadata(e);
  if (!e.ts_ns) {
    builder.count_out_of_range();
    return;
  }
  const std::string_view cat = e.cat;
  if (is_any(cat, {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}) && e.ph == "X") {
    if (main_pid < 0) main_pid = e.pid;
    const bool driver = cat == "cuda_driver" || cat == "Driver";
    builder.add(HostCall{e.name, *e.ts_ns, e.dur_ns, correlation_of(e), tid_of(e), 0, driver});
    return;
  }
  if (is_any(cat, {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}) && e.ph == "X")
    return map_device(e);
  // A device-side wait on a stream (HTA counts those as GPU time; a
  // context-wide one has no stream and is left out as it leaves it out).
  if (cat == "cuda_sync" && e.ph == "X" && e.args.stream >= 0) {
    const fb::SyncKind kind = e.name.find("Wait") != std::string_view::npos  ? fb::SyncKind::StreamWaitEvent
                              : e.name.find("Event") != std::string_view::npos ? fb::SyncKind::Event
                              : e.name.find("Context") != std::string_view::npos ? fb::SyncKind::Context
                                                                                 : fb::SyncKind::Stream;
    builder.add(DeviceSync{*e.ts_ns, e.dur_ns, correlation_of(e), stream_of(e), kind, device_of(e)});
    return;
  }
  if (e.ph == "X" && map_range(e)) return;
  if (cat == "cpu_instant_event" && e.name == "[memory]" && e.args.device_type == 1) {
    builder.add(AllocatorEvent{*e.ts_ns, static_cast<uint64_t>(e.args.addr), e.args.alloc_bytes,
                               static_cast<int16_t>(std::clamp<int64_t>(e.args.device_id, -1, INT16_MAX)),
                               fb::MemoryKind::Pool});
    return;
  }
  builder.count_skipped();
}

void KinetoEventMapper::Impl::map_device(const KinetoEvent& e) {
  const std::string_view cat = e.cat;
  if (cat == "kernel" || cat == "Kernel") {
    DeviceKernel k{e.name, *e.ts_ns, e.dur_ns, correlation_of(e), stream_of(e), device_of(e)};
    std::copy(std::begin(e.args.grid), std::end(e.args.grid), k.grid);
    std::copy(std::begin(e.args.block), std::end(e.args.block), k.block);
    builder.add(k);
  } else if (cat == "gpu_memcpy" || cat == "Memcpy") {
    DeviceCopy c{*e.ts_ns, e.dur_ns, correlation_of(e), stream_of(e), static_cast<uint64_t>(std::max<int64_t>(e.args.bytes, 0))};
    c.device = device_of(e);
    parse_copy_name(e.name, &c);
    builder.add(c);
  } else {
    DeviceMemset s{*e.ts_ns, e.dur_ns, correlation_of(e), stream_of(e), static_cast<uint64_t>(std::max<int64_t>(e.args.bytes, 0))};
    s.device = device_of(e);
    s.kind = e.name.find("Device") != std::string_view::npos ? fb::MemoryKind::Device : fb::MemoryKind::Unknown;
    builder.add(s);
  }
}

// Profiler steps and user annotations are the program's own ranges (the
// NVTX default domain, so --range finds them); CPU operators and Python
// functions are host ranges of their own domains.
bool KinetoEventMapper::Impl::map_range(const KinetoEvent& e) {
  std::string_view domain;
  const std::string_view cat = e.cat;
  if (e.name.starts_with("ProfilerStep#") || cat == "user_annotation") domain = "";
  else if (cat == "gpu_user_annotation") domain = kGpuAnnotationDomain;
  else if (cat == "cpu_op" || cat == "Operator") domain = kCpuOpDomain;
  else if (cat == "python_function") domain = kPythonDomain;
  else return false;
  if (cat == "cpu_op" && main_pid < 0) main_pid = e.pid;
  builder.add(HostRange{e.name, domain, *e.ts_ns, e.dur_ns, tid_of(e)});
  return true;
}

void KinetoEventMapper::Impl::map_metadata(const KinetoEvent& e) {
  if (e.name == "process_name" && process_names.size() < 4096) process_names[e.pid] = std::string(e.args.name);
  else if (e.name == "thread_name" && thread_names.size() < 65536)
    thread_names[{e.pid, e.tid}] = std::string(e.args.name);
  else builder.count_skipped();
}

void KinetoEventMapper::finish() {
  Impl& m = *impl_;
  auto& process = m.builder.process();
  if (m.main_pid >= 0 && m.main_pid <= INT32_MAX) process.pid = static_cast<int>(m.main_pid);
  if (auto it = m.process_names.find(m.main_pid); it != m.process_names.end() && process.exe.empty())
    process.exe = it->second;
  for (const auto& [key, name] : m.thread_names)
    if (key.first == m.main_pid && key.second >= 0) m.builder.set_thread_name(static_cast<uint32_t>(key.second), name);
}

void KinetoEventMapper::add_member(std::string_view key, std::string_view value) {
  apply_kineto_member(impl_->parser, key, value, impl_->builder);
}

}  // namespace gpuscope::importer
