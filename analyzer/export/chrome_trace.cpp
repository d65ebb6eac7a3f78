// Chrome trace-event JSON, streamed chunk by chunk (docs/export.md).
#include "chrome_trace.h"

#include <map>
#include <unordered_map>
#include <variant>
#include <vector>

#include "call_sites.h"
#include "chrome_trace_internal.h"
#include "json_escape.h"
#include "trace_model.h"
#include "track_nesting.h"

namespace gpuscope::exporter {

namespace {

constexpr const char* kKindCategory[analyzer::kCallKinds] = {"cuda.sync",   "cuda.copy",   "cuda.memset",
                                                             "cuda.alloc",  "cuda.free",   "cuda.launch",
                                                             "cuda.init",   "cuda.other"};

uint64_t end_of(uint64_t start, uint64_t duration) { return start + duration; }

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(const reader::FileInfo& file, Output& out, ExportOptions options)
    : out_(out), summary_(file) {
  sites_ = options.symbols ? std::make_unique<CallSites>(summary_.current(), std::move(*options.symbols))
                           : std::make_unique<CallSites>(summary_.current());
  out_.put("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
}

ChromeTraceWriter::~ChromeTraceWriter() = default;

// ---- event framing ----

void ChromeTraceWriter::begin(std::string_view name_json, char phase, uint64_t ns, int64_t pid, uint64_t tid) {
  out_.put(events_ == 0 ? "\n{\"name\":" : ",\n{\"name\":");
  out_.put(name_json);
  out_.put(",\"ph\":\"");
  out_.put(phase);
  out_.put("\",\"ts\":");
  append_us(out_, static_cast<int64_t>(ns - origin_ns_));
  out_.put(",\"pid\":");
  out_.put_int(pid);
  out_.put(",\"tid\":");
  out_.put_uint(tid);
  ++events_;
}

void ChromeTraceWriter::end_event() {
  out_.put('}');
  out_.maybe_flush();
}

void ChromeTraceWriter::put_dur(uint64_t ns) {
  out_.put(",\"dur\":");
  append_us(out_, static_cast<int64_t>(ns));
}

void ChromeTraceWriter::metadata_event(const char* what, int64_t pid, uint64_t tid, std::string_view value) {
  out_.put(events_ == 0 ? "\n{\"name\":\"" : ",\n{\"name\":\"");
  out_.format("{}\",\"ph\":\"M\",\"ts\":0,\"pid\":{},\"tid\":{},\"args\":{{\"name\":", what, pid, tid);
  append_json_string(out_.buffer(), value);
  out_.put("}}");
  ++events_;
  out_.maybe_flush();
}

const std::string& ChromeTraceWriter::name(uint32_t id) {
  auto it = names_.find(id);
  if (it != names_.end()) return it->second;
  const std::string text = id == 0 ? "(unnamed)" : summary_.current().name_of(id);
  return names_.emplace(id, json_string(text)).first->second;
}

analyzer::CallKind ChromeTraceWriter::kind_of(uint32_t function_id) {
  auto it = kinds_.find(function_id);
  if (it != kinds_.end()) return it->second;
  const auto k = analyzer::classify_function(summary_.current().name_of(function_id));
  return kinds_.emplace(function_id, k).first->second;
}

// ---- chunks ----

void ChromeTraceWriter::add(const reader::ChunkView& v) {
  summary_.add(v);
  const fb::Chunk& c = *v.chunk;
  if (!origin_set_) {
    // The process start is the origin; without the metadata frame, the
    // first chunk's base time.
    origin_ns_ = c.metadata() != nullptr ? c.metadata()->start_monotonic_ns() : c.base_ns();
    origin_set_ = true;
  }
  if (c.metadata() != nullptr && pid_ == kUnknownPid) pid_ = c.metadata()->pid();
  if (c.device_collection() != nullptr && c.device_collection()->state() == fb::DeviceCollectionState::Active)
    flows_ = true;
  stats_.records += v.api_calls.size() + v.copies.size() + v.memsets.size() + v.kernels.size() + v.syncs.size() +
                    v.allocs.size() + v.cpu_samples.size() + v.markers.size() + v.gpu_samples.size() +
                    v.graph_launches.size();
  index_typed(v);
  for (const auto& a : v.allocs)
    if (a.source() == fb::Source::Host) live_memory(a);
  for (const auto& call : v.api_calls) api_call(call);
  for (const auto& k : v.kernels)
    if (k.source() == fb::Source::Device) device_kernel(k);
  for (const auto& cp : v.copies)
    if (cp.source() == fb::Source::Device) device_copy(cp);
  for (const auto& m : v.memsets)
    if (m.source() == fb::Source::Device) device_memset(m);
  for (const auto& s : v.syncs)
    if (s.source() == fb::Source::Device) device_sync(s);
  for (const auto& a : v.allocs)
    if (a.source() == fb::Source::Device) device_alloc(a);
  for (const auto& m : v.markers) marker(m);
  for (const auto& g : v.gpu_samples) gpu_sample(g);
  widen(v);
  retire_typed();
}

void ChromeTraceWriter::widen(const reader::ChunkView& v) {
  const auto span = [&](const auto& records) {
    for (const auto& r : records) last_ns_ = std::max(last_ns_, end_of(r.start_ns(), r.duration_ns()));
  };
  span(v.api_calls), span(v.copies), span(v.memsets), span(v.kernels), span(v.syncs), span(v.allocs);
  span(v.markers), span(v.graph_launches);
  for (const auto& g : v.gpu_samples) last_ns_ = std::max(last_ns_, g.start_ns());
}

// ---- host calls and their typed records ----

void ChromeTraceWriter::index_typed(const reader::ChunkView& v) {
  // What is left from the previous chunk gets this one to find its call
  // (a drain can fall between a typed record and its call); after that it
  // is written on its own.
  std::swap(previous_typed_, typed_);
  typed_.clear();
  const auto index = [&](const auto& records) {
    for (const auto& r : records)
      if (r.source() == fb::Source::Host && r.correlation_id() != 0) typed_.emplace(r.correlation_id(), r);
  };
  index(v.copies), index(v.memsets), index(v.kernels), index(v.syncs), index(v.allocs), index(v.graph_launches);
}

void ChromeTraceWriter::retire_typed() {
  for (const auto& [corr, rec] : previous_typed_) unmatched_typed(rec);
  previous_typed_.clear();
}

std::optional<TypedRecord> ChromeTraceWriter::take_typed(uint64_t correlation) {
  for (auto* table : {&typed_, &previous_typed_}) {
    auto it = table->find(correlation);
    if (it == table->end()) continue;
    TypedRecord r = it->second;
    table->erase(it);
    return r;
  }
  return std::nullopt;
}

void ChromeTraceWriter::api_call(const fb::ApiCall& c) {
  uint64_t start = c.start_ns();
  const uint64_t end = end_of(c.start_ns(), c.duration_ns());
  const auto placed = threads_[c.tid()].place(&start, end);
  const auto kind = kind_of(c.function_id());
  const char* cat = kKindCategory[static_cast<size_t>(kind)];
  std::optional<TypedRecord> typed;
  if (c.depth() == 0 && c.correlation_id() != 0) typed = take_typed(c.correlation_id());
  if (placed == NestGuard::Placed::Rejected) {
    ++stats_.unplaced;
    begin(name(c.function_id()), 'i', c.start_ns(), pid_, c.tid());
    out_.put(",\"s\":\"t\"");
  } else {
    if (placed == NestGuard::Placed::Clamped) ++stats_.clamped;
    begin(name(c.function_id()), 'X', start, pid_, c.tid());
    put_dur(end - start);
  }
  out_.put(",\"cat\":\"");
  out_.put(cat);
  out_.put("\",\"args\":{\"correlation\":");
  out_.put_uint(c.correlation_id());
  out_.put(",\"result\":");
  out_.put_int(c.result());
  out_.put(",\"depth\":");
  out_.put_uint(c.depth());
  if (c.stream() != 0) {
    out_.put(",\"stream\":\"");
    out_.put_hex(c.stream());
    out_.put('"');
  }
  if (c.device() >= 0) {
    out_.put(",\"device\":");
    out_.put_int(c.device());
  }
  if ((c.flags() & container::kCallDriverApi) != 0) out_.put(",\"driver_api\":true");
  if ((c.flags() & container::kCallCaptured) != 0) out_.put(",\"captured_into_graph\":true");
  if (c.repeat() != 0) out_.format(",\"polls_coalesced\":{}", c.repeat());
  if (placed != NestGuard::Placed::Ok) out_.format(",\"recorded_duration_ns\":{}", c.duration_ns());
  if (typed) typed_args(*typed);
  if (const std::string& site = sites_->text(c.stack_id()); !site.empty()) {
    out_.put(",\"call_site\":");
    append_json_string(out_.buffer(), site);
  }
  out_.put('}');
  end_event();
  if (flows_ && c.depth() == 0 && c.correlation_id() != 0 &&
      (kind == analyzer::CallKind::Launch || kind == analyzer::CallKind::Copy || kind == analyzer::CallKind::Memset))
    flow('s', c.correlation_id(), c.start_ns(), pid_, c.tid());
}

void ChromeTraceWriter::flow(char phase, uint64_t correlation, uint64_t ns, int64_t pid, uint64_t tid) {
  // Flow v1: "s" binds to the slice enclosing it (the launch call), "f"
  // with "bp":"e" to the slice enclosing it (the device record starting
  // there). Ids are kept below 2^53 so JavaScript viewers read them exactly.
  begin("\"launch\"", phase, ns, pid, tid);
  out_.format(",\"cat\":\"flow\",\"id\":{}{}", correlation & ((uint64_t{1} << 53) - 1),
              phase == 'f' ? ",\"bp\":\"e\"" : "");
  end_event();
}

// ---- the end ----

ExportResult ChromeTraceWriter::finish(const reader::TraceReader& reader) {
  uint64_t end_ns = last_ns_;
  if (summary_.current().end) end_ns = std::max(end_ns, summary_.current().end->end_monotonic_ns);
  close_nvtx(end_ns);
  for (auto* table : {&previous_typed_, &typed_}) {
    for (const auto& [corr, rec] : *table) unmatched_typed(rec);
    table->clear();
  }
  write_capture_windows();
  ExportResult result;
  result.summary = summary_.finish(reader);
  write_process_names(result.summary);
  stats_.events = events_;
  result.stats = stats_;
  write_metadata(result.summary);
  out_.flush();
  return result;
}

void ChromeTraceWriter::write_metadata(const reader::TraceSummary& s) {
  out_.put("\n],\n\"metadata\":{\"source\":\"gpuscope\",\"clock\":\"CLOCK_MONOTONIC\"");
  out_.format(",\"origin_monotonic_ns\":{},\"trace_format\":\"{}.{}\"", origin_ns_, s.file.format_major,
              s.file.format_minor);
  if (s.process) {
    out_.format(",\"pid\":{},\"exe\":", s.process->pid);
    append_json_string(out_.buffer(), s.process->exe);
    out_.put(",\"gpuscope_version\":");
    append_json_string(out_.buffer(), s.process->gpuscope_version);
  }
  out_.format(",\"simulated\":{},\"complete\":{}", s.on_simulated_gpu(), s.end.has_value() && s.problems.empty());
  const ExportStats& st = stats_;
  out_.format(",\"records\":{},\"events\":{},\"clamped_spans\":{},\"instants_for_unnestable_spans\":{}"
              ",\"extra_stream_lanes\":{},\"host_records_without_call\":{},\"unmatched_nvtx_ends\":{}"
              ",\"unterminated_nvtx_ranges\":{}",
              st.records, st.events, st.clamped, st.unplaced, st.extra_lanes, st.unmatched_records,
              st.unmatched_pops, st.unterminated);
  out_.put(",\"problems\":[");
  for (size_t i = 0; i < s.problems.size(); ++i) {
    if (i != 0) out_.put(',');
    append_json_string(out_.buffer(), reader::describe(s.problems[i]));
  }
  out_.put("]}}\n");
}

ExportResult write_chrome_trace(reader::TraceReader& reader, Output& out, ExportOptions options) {
  ChromeTraceWriter writer(reader.info(), out, std::move(options));
  reader.read([&](const reader::ChunkView& v) { writer.add(v); });
  return writer.finish(reader);
}

}  // namespace gpuscope::exporter
