#include "trace_summary.h"

#include <algorithm>

#include "call_repeats.h"
#include "record_flags.h"

namespace gpuscope::reader {
namespace {

std::string str(const flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }

template <class T> void widen_span(std::span<const T> records, uint64_t* first, uint64_t* last) {
  for (const T& r : records) {
    *first = std::min(*first, r.start_ns());
    uint64_t end = r.start_ns();
    if constexpr (requires { r.duration_ns(); }) end += r.duration_ns();
    *last = std::max(*last, end);
  }
}

void read_drops(const flatbuffers::Vector<flatbuffers::Offset<fb::DropCount>>* v,
                std::array<uint64_t, kDropReasons>* out) {
  if (v == nullptr) return;
  out->fill(0);
  for (const fb::DropCount* d : *v) {
    const auto r = static_cast<size_t>(d->reason());
    if (r < kUnknownDropReason) (*out)[r] = d->count();
    else (*out)[kUnknownDropReason] += d->count();
  }
}

EndInfo to_end_info(const fb::Totals& t) {
  EndInfo e;
  e.kind = t.end_kind() <= fb::EndKind::MAX ? t.end_kind() : fb::EndKind::Unknown;
  e.exit_status = t.exit_status();
  e.began_kind = t.began_kind() <= fb::EndKind::MAX ? t.began_kind() : fb::EndKind::Unknown;
  e.began_status = t.began_status();
  e.end_monotonic_ns = t.end_monotonic_ns();
  e.events_written = t.events_written();
  e.frames_written = t.frames_written();
  e.bytes_written = t.bytes_written();
  e.message = str(t.message());
  e.tick_rate_restarts = t.tick_rate_restarts();
  return e;
}

container::DeviceDescription to_device(const fb::DeviceInfo& d) {
  container::DeviceDescription out;
  out.index = d.index();
  out.name = str(d.name());
  out.uuid = str(d.uuid());
  out.pci_bus_id = str(d.pci_bus_id());
  out.memory_total_bytes = d.memory_total_bytes();
  out.pcie_gen_current = d.pcie_gen_current();
  out.pcie_gen_max = d.pcie_gen_max();
  out.pcie_width_current = d.pcie_width_current();
  out.pcie_width_max = d.pcie_width_max();
  out.mig_mode = d.mig_mode();
  out.ecc_mode = d.ecc_mode();
  out.ecc_corrected = d.ecc_corrected();
  out.ecc_uncorrected = d.ecc_uncorrected();
  out.numa_node = d.numa_node();
  out.local_cpus = str(d.local_cpus());
  if (d.unsupported() != nullptr)
    for (const auto* u : *d.unsupported()) out.unsupported.push_back(str(u));
  out.vbios = str(d.vbios());
  out.persistence_mode = d.persistence_mode();
  out.power_limit_mw = d.power_limit_mw();
  out.power_default_limit_mw = d.power_default_limit_mw();
  out.mig_devices = str(d.mig_devices());
  out.nvlinks = d.nvlinks();
  out.nvlinks_active = d.nvlinks_active();
  return out;
}

container::LibraryLoadEvent to_load(const fb::LibraryLoad& l) {
  container::LibraryLoadEvent out;
  out.start_ns = l.start_ns();
  out.tid = l.tid();
  out.path = str(l.path());
  out.resolved_path = str(l.resolved_path());
  out.flags = l.flags();
  out.ok = l.ok();
  out.error = str(l.error());
  out.deepbind_stripped = l.deepbind_stripped();
  out.unload = l.unload();
  return out;
}

container::EnvironmentProbeData to_probe(const fb::EnvironmentProbe& p) {
  container::EnvironmentProbeData out;
  if (p.device_nodes() != nullptr)
    for (const auto* n : *p.device_nodes())
      out.device_nodes.push_back({str(n->path()), n->exists(), n->readable(), n->writable()});
  out.driver_loaded = p.driver_loaded();
  out.driver_error = str(p.driver_error());
  out.driver_version = p.driver_version();
  out.nvml_status = str(p.nvml_status());
  out.nvml_driver_version = str(p.nvml_driver_version());
  out.visible_devices = p.visible_devices();
  return out;
}

container::ImportSourceData to_import_source(const fb::ImportSource& im) {
  container::ImportSourceData d{str(im.format()), str(im.path()), str(im.producer()), {}, im.events(), im.skipped(),
                                im.unjoined(), im.out_of_range(), im.complete(), str(im.damage()), im.mid_run()};
  if (im.notes() != nullptr)
    for (const auto* n : *im.notes()) d.notes.push_back(n == nullptr ? std::string() : n->str());
  return d;
}

container::DeviceCollectionData to_device_collection(const fb::DeviceCollection& d) {
  container::DeviceCollectionData out;
  out.state = static_cast<uint8_t>(d.state());
  out.reason = str(d.reason());
  out.cupti_version = d.cupti_version();
  out.cupti_path = str(d.cupti_path());
  out.records = d.records();
  out.dropped = d.dropped();
  out.buffers_refused = d.buffers_refused();
  out.unconverted = d.unconverted();
  out.uncorrelated = d.uncorrelated();
  out.clock = static_cast<uint8_t>(d.clock());
  out.calibration_pairs = d.calibration_pairs();
  return out;
}

// Python frames' code objects and status (format 1.6).
void read_python_tables(const fb::Chunk& c, TraceSummary* s) {
  if (c.python_codes() != nullptr)
    for (const auto* pc : *c.python_codes()) {
      container::PythonCodeDescription d;
      d.key = pc->key();
      d.file = str(pc->file());
      d.name = str(pc->name());
      d.first_line = pc->first_line();
      if (pc->line_table() != nullptr) d.line_table.assign(pc->line_table()->begin(), pc->line_table()->end());
      d.line_table_cut = pc->line_table_cut();
      s->python_codes[d.key] = std::move(d);
    }
  if (const auto* ps = c.python_stacks(); ps != nullptr)
    s->python_stacks = container::PythonStacksData{static_cast<uint8_t>(ps->state()), ps->version(),
                                                   str(ps->reason()), ps->chains_cut(), ps->codes_dropped()};
}

void read_side_tables(const fb::Chunk& c, TraceSummary* s) {
  if (c.devices() != nullptr)
    for (const auto* d : *c.devices()) {
      auto device = to_device(*d);
      std::erase_if(s->devices, [&](const auto& known) { return known.index == device.index; });
      s->devices.push_back(std::move(device));
    }
  if (c.loads() != nullptr)
    for (const auto* l : *c.loads()) s->loads.push_back(to_load(*l));
  if (c.probe() != nullptr) s->probe = to_probe(*c.probe());
  if (c.device_collection() != nullptr) s->device_collection = to_device_collection(*c.device_collection());
  if (const auto* st = c.stack_capture(); st != nullptr)
    s->stack_capture = container::StackCaptureData{static_cast<uint8_t>(st->state()), str(st->reason()), st->depth(),
                                                 st->unwind_failures(), st->table_full()};
  if (const auto* h = c.host_sampling(); h != nullptr)
    s->host_sampling = container::HostSamplingData{static_cast<uint8_t>(h->state()), str(h->reason()), h->period_ns(),
                                                   h->samples(), h->lost(), h->threads(), h->threads_refused(),
                                                   h->unreadable()};
  if (const auto* im = c.import_source(); im != nullptr) s->import_source = to_import_source(*im);
  if (c.modules() != nullptr)
    for (const auto* m : *c.modules()) {
      container::ModuleDescription d;
      d.id = m->id();
      d.path = str(m->path());
      if (m->build_id() != nullptr) d.build_id.assign(m->build_id()->begin(), m->build_id()->end());
      d.load_address = m->load_address();
      d.low_address = m->low_address();
      d.high_address = m->high_address();
      s->modules.push_back(std::move(d));
    }
  if (c.stacks() != nullptr)
    for (const auto* st : *c.stacks())
      if (st->frames() != nullptr) s->stacks[st->id()].assign(st->frames()->begin(), st->frames()->end());
  read_python_tables(c, s);
}

}  // namespace

ProcessInfo to_process_info(const fb::ProcessMetadata& m) {
  ProcessInfo p;
  p.pid = m.pid();
  p.ppid = m.ppid();
  p.uid = m.uid();
  p.exe = str(m.exe());
  if (m.argv() != nullptr)
    for (const auto* a : *m.argv()) p.argv.push_back(str(a));
  p.start_monotonic_ns = m.start_monotonic_ns();
  p.start_realtime_ns = m.start_realtime_ns();
  p.hostname = str(m.hostname());
  p.kernel_release = str(m.kernel_release());
  if (m.cpu_affinity() != nullptr) p.cpu_affinity.assign(m.cpu_affinity()->begin(), m.cpu_affinity()->end());
  p.online_cpus = m.online_cpus();
  if (m.environment() != nullptr)
    for (const auto* kv : *m.environment()) p.environment.emplace_back(str(kv->key()), str(kv->value()));
  p.gpuscope_version = str(m.gpuscope_version());
  p.boot_id = str(m.boot_id());
  p.run_id = str(m.run_id());
  p.trace_parent_pid = m.trace_parent_pid();
  p.rank = m.rank();
  p.local_rank = m.local_rank();
  p.world_size = m.world_size();
  p.rank_source = str(m.rank_source());
  p.host_clock = str(m.host_clock());
  return p;
}

uint64_t TraceSummary::dropped_total() const {
  uint64_t n = 0;
  for (uint64_t d : drops) n += d;
  return n;
}

SummaryBuilder::SummaryBuilder(const FileInfo& file) { s_.file = file; }

void RecordTally::add_calls(uint32_t function_id, uint64_t n) {
  if (function_id >= kDenseIds) {
    calls_by_far_id_[function_id] += n;
    return;
  }
  if (function_id >= calls_by_id_.size()) calls_by_id_.resize(function_id + 1);
  calls_by_id_[function_id] = calls_by_id_[function_id].value_or(0) + n;
}

void SummaryBuilder::add_tables(const ChunkView& v) {
  const fb::Chunk& c = *v.chunk;
  if (c.metadata() != nullptr && !s_.process) s_.process = to_process_info(*c.metadata());
  if (c.strings() != nullptr)
    for (const auto* is : *c.strings()) s_.strings[is->id()] = str(is->text());
  read_drops(c.drops(), &s_.drops);
  read_side_tables(c, &s_);
  if (c.totals() != nullptr) {
    s_.end = to_end_info(*c.totals());
    read_drops(c.totals()->drops(), &s_.drops);
  }
}

void RecordTally::add(const ChunkView& v) {
  counts_.api_calls += v.api_calls.size();
  counts_.copies += v.copies.size();
  counts_.memsets += v.memsets.size();
  counts_.kernels += v.kernels.size();
  counts_.syncs += v.syncs.size();
  counts_.allocs += v.allocs.size();
  counts_.cpu_samples += v.cpu_samples.size();
  counts_.markers += v.markers.size();
  counts_.gpu_samples += v.gpu_samples.size();
  counts_.graph_launches += v.graph_launches.size();
  counts_.host_samples += v.host_samples.size();
  counts_.process_gpu_samples += v.process_gpu_samples.size();
  for (const auto& g : v.graph_launches) graphs_.add(g);
  const auto from_device = [](const auto& records) {
    return static_cast<uint64_t>(std::count_if(records.begin(), records.end(),
                                               [](const auto& r) { return r.source() == fb::Source::Device; }));
  };
  counts_.device.copies += from_device(v.copies);
  counts_.device.memsets += from_device(v.memsets);
  counts_.device.kernels += from_device(v.kernels);
  counts_.device.syncs += from_device(v.syncs);
  counts_.device.allocs += from_device(v.allocs);
  for (const auto& call : v.api_calls) {
    const uint64_t n = calls_in(call);
    add_calls(call.function_id(), n);
    if (call.result() != 0 && call.depth() == 0) results_by_id_[{call.function_id(), call.result()}] += n;
    if ((call.flags() & container::kCallCaptured) != 0 && call.depth() == 0) ++captured_calls_;
    if (call.repeat() != 0) {
      coalesced_polls_ += call.repeat();
      ++coalesced_records_;
    }
  }
  for (const auto& count : v.call_counts) {
    add_calls(count.function_id(), count.count());
    counted_calls_ += count.count();
  }
  widen_span(v.api_calls, &first_, &last_);
  widen_span(v.copies, &first_, &last_);
  widen_span(v.memsets, &first_, &last_);
  widen_span(v.kernels, &first_, &last_);
  widen_span(v.syncs, &first_, &last_);
  widen_span(v.allocs, &first_, &last_);
  widen_span(v.cpu_samples, &first_, &last_);
  widen_span(v.markers, &first_, &last_);
  widen_span(v.gpu_samples, &first_, &last_);
  widen_span(v.graph_launches, &first_, &last_);
  widen_span(v.host_samples, &first_, &last_);
  widen_span(v.process_gpu_samples, &first_, &last_);
}

void RecordTally::finish_into(TraceSummary* s) const {
  s->counts = counts_;
  s->graphs = graphs_;
  s->counted_calls = counted_calls_;
  s->captured_calls = captured_calls_;
  s->coalesced_polls = coalesced_polls_;
  s->coalesced_records = coalesced_records_;
  for (uint32_t id = 0; id < calls_by_id_.size(); ++id)
    if (calls_by_id_[id]) s->calls_by_function[s->name_of(id)] += *calls_by_id_[id];
  for (const auto& [id, n] : calls_by_far_id_) s->calls_by_function[s->name_of(id)] += n;
  for (const auto& [key, n] : results_by_id_) s->nonzero_results[{s->name_of(key.first), key.second}] += n;
  if (first_ != UINT64_MAX) {
    s->first_ns = first_;
    s->last_ns = last_;
  }
}

void GraphWork::add(const fb::GraphLaunch& g) {
  kernels += g.kernels();
  copies += g.copies();
  memsets += g.memsets();
  other_nodes += g.other_nodes();
  if ((g.flags() & container::kGraphContentsUnknown) != 0) ++unknown_launches;
  if ((g.flags() & container::kGraphHasConditional) != 0) ++conditional_launches;
}

std::string TraceSummary::name_of(uint32_t id) const {
  auto it = strings.find(id);
  return it != strings.end() ? it->second : "<unknown #" + std::to_string(id) + ">";
}

bool TraceSummary::on_simulated_gpu() const {
  return std::any_of(devices.begin(), devices.end(), [](const container::DeviceDescription& d) {
    return d.name.find("simgpu") != std::string::npos || d.name.find("(simulated)") != std::string::npos;
  });
}

TraceSummary SummaryBuilder::finish(const TraceReader& reader) {
  records_.finish_into(&s_);
  s_.stats = reader.stats();
  s_.problems = reader.problems();
  return std::move(s_);
}

TraceSummary summarize(TraceReader& reader) {
  SummaryBuilder builder(reader.info());
  reader.read([&](const ChunkView& v) { builder.add(v); });
  return builder.finish(reader);
}

const char* end_kind_text(fb::EndKind kind) {
  switch (kind) {
    case fb::EndKind::ReturnFromMain: return "returned from main";
    case fb::EndKind::Exit: return "exit()";
    case fb::EndKind::ImmediateExit: return "_exit()";
    case fb::EndKind::Exec: return "replaced by exec()";
    case fb::EndKind::OutputFailed: return "capture stopped: the trace could not be written";
    case fb::EndKind::Detached: return "capture detached";
    case fb::EndKind::LastThreadExit: return "the last thread ended (main had called pthread_exit)";
    default: return "ended (how is unknown)";
  }
}

namespace {

bool has_exit_status(fb::EndKind kind) {
  return kind == fb::EndKind::ReturnFromMain || kind == fb::EndKind::Exit || kind == fb::EndKind::ImmediateExit ||
         kind == fb::EndKind::LastThreadExit;
}

std::string step_text(fb::EndKind kind, int status) {
  std::string s = end_kind_text(kind);
  if (has_exit_status(kind)) s += ", exit status " + std::to_string(status);
  return s;
}

}  // namespace

FirstFrame read_first_frame(const std::string& path) {
  FirstFrame first;
  TraceReader r;
  std::string error;
  if (!r.open_file(path, &error)) return first;
  first.is_trace = true;
  r.read([&](const ChunkView& v) {
    first.whole = true;
    if (v.chunk->metadata() != nullptr) first.process = to_process_info(*v.chunk->metadata());
  }, 1);
  return first;
}

std::string end_text(const EndInfo& end) {
  std::string s = step_text(end.kind, end.exit_status);
  if (end.began_kind != fb::EndKind::Unknown)
    s += ", called while the process was already ending (" + step_text(end.began_kind, end.began_status) + ")";
  if (!end.message.empty()) s += ": " + end.message;
  return s;
}

const char* drop_reason_text(fb::DropReason reason) {
  switch (reason) {
    case fb::DropReason::BufferFull: return "thread buffer full";
    case fb::DropReason::NoBuffer: return "no thread buffer free";
    case fb::DropReason::NotRecording: return "after capture stopped";
    case fb::DropReason::RecordTooLarge: return "record too large";
    case fb::DropReason::StringTableFull: return "NVTX message not interned (string table full; record kept unnamed)";
    case fb::DropReason::StringSlotBusy:
      return "NVTX message not interned (another thread was still storing the same text; record kept unnamed)";
  }
  return "a reason this gpuscope does not know (written by a newer one)";
}

}  // namespace gpuscope::reader
