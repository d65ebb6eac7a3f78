// The events table: one CSV row per record (RFC 4180), for spreadsheets and
// dataframes. Rows follow the file's order (chunk by chunk, one record kind
// after another), not time: sort by time_ns. docs/export.md.
#include <unordered_map>

#include "call_repeats.h"
#include "call_sites.h"
#include "chrome_trace.h"
#include "json_escape.h"
#include "record_flags.h"

namespace gpuscope::exporter {
namespace {

constexpr std::string_view kHeader =
    "time_ns,duration_ns,pid,tid,kind,source,name,bytes,copy_kind,stream,device,correlation,error,call_site,"
    "detail,calls\r\n";

// A field, quoted when it holds a comma, quote or line break (RFC 4180);
// bytes that are not UTF-8 become U+FFFD so every reader decodes the file.
void put_field(Output& out, std::string_view s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos;
  if (quote) out.put('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const size_t n = c < 0x80 ? 1 : utf8_sequence_length(s, i);
    if (n == 0) {
      out.put("\xEF\xBF\xBD");
      ++i;
      continue;
    }
    if (c == '"') out.put('"');
    out.put(s.substr(i, n));
    i += n;
  }
  if (quote) out.put('"');
}

std::string graph_launch_text(const fb::GraphLaunch& g) {
  if ((g.flags() & container::kGraphContentsUnknown) != 0)
    return fmt::format("graph exec 0x{:x}, contents unknown (not seen instantiated)", g.graph_exec());
  return fmt::format("graph exec 0x{:x}, {} kernels, {} copies, {} memsets, {} other nodes{}", g.graph_exec(),
                     g.kernels(), g.copies(), g.memsets(), g.other_nodes(),
                     (g.flags() & container::kGraphHasConditional) != 0 ? ", conditional bodies not counted" : "");
}

class CsvWriter {
 public:
  CsvWriter(const reader::FileInfo& file, Output& out, ExportOptions options) : out_(out), summary_(file) {
    sites_ = options.symbols ? std::make_unique<CallSites>(summary_.current(), std::move(*options.symbols))
                             : std::make_unique<CallSites>(summary_.current());
    out_.put(kHeader);
  }

  void add(const reader::ChunkView& v);
  ExportResult finish(const reader::TraceReader& reader) {
    out_.flush();
    ExportResult r;
    r.summary = summary_.finish(reader);
    r.stats = stats_;
    return r;
  }

 private:
  struct Row {
    uint64_t start = 0, duration = 0;
    std::string_view kind, source = "host";
    std::string name;
    std::optional<uint64_t> tid, bytes, stream, device, correlation, error;
    std::optional<uint64_t> calls;  // API calls and host syncs: the calls the row stands for
    std::string_view copy_kind;
    std::string call_site, detail;
  };
  void write(const Row& r);
  void add_calls(const reader::ChunkView& v);
  void add_other(const reader::ChunkView& v);
  template <class T> Row typed_row(const T& rec, std::string_view kind);
  std::optional<uint64_t> tid_of(uint64_t correlation) const;

  Output& out_;
  reader::SummaryBuilder summary_;
  std::unique_ptr<CallSites> sites_;
  ExportStats stats_;
  int64_t pid_ = -1;
  // Typed host records have no tid: their API call's, from this chunk or
  // the one before (a drain can fall between the two).
  std::unordered_map<uint64_t, uint32_t> call_tids_, previous_call_tids_;
  reader::CallRepeats repeats_;
};

std::optional<uint64_t> CsvWriter::tid_of(uint64_t correlation) const {
  for (const auto* table : {&call_tids_, &previous_call_tids_})
    if (auto it = table->find(correlation); it != table->end()) return it->second;
  return std::nullopt;
}

void CsvWriter::write(const Row& r) {
  const auto num = [&](const std::optional<uint64_t>& v) {
    if (v) out_.format("{}", *v);
    out_.put(',');
  };
  out_.format("{},{},", r.start, r.duration);
  if (pid_ >= 0) out_.format("{}", pid_);
  out_.put(',');
  num(r.tid);
  out_.format("{},{},", r.kind, r.source);
  put_field(out_, r.name);
  out_.put(',');
  num(r.bytes);
  out_.format("{},", r.copy_kind);
  if (r.stream) out_.format("0x{:x}", *r.stream);
  out_.put(',');
  if (r.device) out_.format("{}", static_cast<int64_t>(*r.device));
  out_.put(',');
  num(r.correlation);
  if (r.error) out_.format("{}", static_cast<int64_t>(*r.error));
  out_.put(',');
  put_field(out_, r.call_site);
  out_.put(',');
  put_field(out_, r.detail);
  out_.put(',');
  if (r.calls) out_.format("{}", *r.calls);
  out_.put("\r\n");
  ++stats_.events;
  out_.maybe_flush();
}

template <class T> CsvWriter::Row CsvWriter::typed_row(const T& rec, std::string_view kind) {
  Row r;
  r.start = rec.start_ns();
  r.duration = rec.duration_ns();
  r.kind = kind;
  r.source = rec.source() == fb::Source::Device ? "device" : "host";
  r.correlation = rec.correlation_id();
  if (rec.device() >= 0) r.device = static_cast<uint64_t>(rec.device());
  if (rec.source() == fb::Source::Host) r.tid = tid_of(rec.correlation_id());
  return r;
}

void CsvWriter::add(const reader::ChunkView& v) {
  summary_.add(v);
  const fb::Chunk& c = *v.chunk;
  if (c.metadata() != nullptr && pid_ < 0) pid_ = c.metadata()->pid();
  stats_.records += v.api_calls.size() + v.copies.size() + v.memsets.size() + v.kernels.size() + v.syncs.size() +
                    v.allocs.size() + v.cpu_samples.size() + v.markers.size() + v.gpu_samples.size() +
                    v.graph_launches.size() + v.host_samples.size() + v.process_gpu_samples.size();
  add_calls(v);
  for (const auto& cp : v.copies) {
    Row r = typed_row(cp, "copy");
    r.bytes = cp.bytes(), r.stream = cp.stream(), r.copy_kind = fb::EnumNameCopyDirection(cp.direction());
    r.detail = fmt::format("{} -> {}{}{}", fb::EnumNameMemoryKind(cp.src_kind()), fb::EnumNameMemoryKind(cp.dst_kind()),
                           (cp.flags() & container::kCopyAsync) != 0 ? ", async" : "",
                           (cp.flags() & container::kCopyPrefetch) != 0 ? ", prefetch" : "");
    write(r);
  }
  for (const auto& m : v.memsets) {
    Row r = typed_row(m, "memset");
    r.bytes = m.bytes(), r.stream = m.stream();
    r.detail = fmt::format("value {}, {}", m.value(), fb::EnumNameMemoryKind(m.memory_kind()));
    write(r);
  }
  for (const auto& k : v.kernels) {
    Row r = typed_row(k, "kernel");
    r.stream = k.stream(), r.name = summary_.current().name_of(k.name_id());
    r.detail = fmt::format("grid {}x{}x{}, block {}x{}x{}, {} B dynamic shared", k.grid_x(), k.grid_y(), k.grid_z(),
                           k.block_x(), k.block_y(), k.block_z(), k.dynamic_shared_bytes());
    write(r);
  }
  for (const auto& s : v.syncs) {
    Row r = typed_row(s, "sync");
    r.name = fb::EnumNameSyncKind(s.kind());
    r.error = static_cast<uint64_t>(static_cast<int64_t>(s.result()));
    r.detail = fmt::format("object 0x{:x}", s.object());
    if (s.source() == fb::Source::Host) r.calls = repeats_.calls_of(s);
    write(r);
  }
  for (const auto& a : v.allocs) {
    Row r = typed_row(a, "alloc");
    r.name = fb::EnumNameAllocOp(a.op()), r.bytes = a.bytes();
    const bool physical = (a.flags() & container::kAllocPhysical) != 0;
    r.detail = fmt::format("{} 0x{:x}, {}{}{}", physical ? "handle" : "address", a.address(),
                           fb::EnumNameMemoryKind(a.memory_kind()),
                           (a.flags() & container::kAllocAsync) != 0 ? ", stream-ordered" : "",
                           physical ? ", physical (cuMemCreate)" : "");
    write(r);
  }
  for (const auto& g : v.graph_launches) {
    Row r = typed_row(g, "graph_launch");
    r.stream = g.stream();
    r.detail = graph_launch_text(g);
    write(r);
  }
  add_other(v);
}

// The CUDA calls; each one's thread is remembered for the typed records
// that share its correlation id (this chunk's and the next one's).
void CsvWriter::add_calls(const reader::ChunkView& v) {
  std::swap(previous_call_tids_, call_tids_);
  call_tids_.clear();
  repeats_.add(v);
  for (const auto& a : v.api_calls) {
    if (a.depth() == 0) call_tids_[a.correlation_id()] = a.tid();
    Row r;
    r.start = a.start_ns(), r.duration = a.duration_ns(), r.kind = "api_call", r.tid = a.tid();
    r.name = summary_.current().name_of(a.function_id());
    r.correlation = a.correlation_id(), r.error = static_cast<uint64_t>(static_cast<int64_t>(a.result()));
    if (a.stream() != 0) r.stream = a.stream();
    if (a.device() >= 0) r.device = static_cast<uint64_t>(a.device());
    r.call_site = sites_->text(a.stack_id());
    const bool driver = (a.flags() & container::kCallDriverApi) != 0;
    const bool captured = (a.flags() & container::kCallCaptured) != 0;
    r.detail = fmt::format("depth {}{}{}", a.depth(), driver ? ", driver API" : "", captured ? ", captured into a graph" : "");
    if (a.repeat() != 0) r.detail += fmt::format(", {} polls coalesced", a.repeat());
    r.calls = reader::calls_in(a);
    write(r);
  }
}

// Records that are not CUDA calls: NVTX markers and the samplers' records.
void CsvWriter::add_other(const reader::ChunkView& v) {
  for (const auto& m : v.markers) {
    Row r;
    r.start = m.start_ns(), r.duration = m.duration_ns(), r.kind = "marker", r.tid = m.tid();
    r.name = m.name_id() != 0 ? summary_.current().name_of(m.name_id()) : "";
    if (m.correlation_id() != 0) r.correlation = m.correlation_id();
    r.detail = fmt::format("{}{}{}", fb::EnumNameMarkerKind(m.kind()), m.domain_id() != 0 ? ", domain " : "",
                           m.domain_id() != 0 ? summary_.current().name_of(m.domain_id()) : "");
    write(r);
  }
  for (const auto& s : v.cpu_samples) {
    Row r;
    r.start = s.start_ns(), r.kind = "cpu_sample", r.source = "sampler";
    if (s.tid() != 0) r.tid = s.tid();
    r.detail = fmt::format("cpu {} ns, system {} ns", s.cpu_ns(), s.system_ns());
    write(r);
  }
  for (const auto& s : v.host_samples) {  // CPU stack samples (format 1.4): where the thread was
    Row r;
    r.start = s.start_ns(), r.kind = "host_sample", r.source = "sampler", r.tid = s.tid();
    if (sites_ && s.stack_id() != 0) r.call_site = sites_->text(s.stack_id());
    r.detail = fmt::format("stack {}", s.stack_id());
    write(r);
  }
  for (const auto& g : v.gpu_samples) {
    Row r;
    r.start = g.start_ns(), r.kind = "gpu_sample", r.source = "nvml", r.device = g.device();
    r.detail = fmt::format("valid 0x{:x}, util {}%, memory util {}%, used {} B, pcie tx {} rx {} KB/s, sm {} MHz",
                           g.valid(), g.gpu_util_pct(), g.memory_util_pct(), g.memory_used_bytes(), g.pcie_tx_kbps(),
                           g.pcie_rx_kbps(), g.sm_clock_mhz());
    write(r);
  }
  for (const auto& p : v.process_gpu_samples) {  // the driver's per-process shares (format 1.8)
    Row r;
    r.start = p.start_ns() - p.window_ns(), r.duration = p.window_ns();
    r.kind = "process_gpu_sample", r.source = "nvml", r.device = p.device();
    r.detail = fmt::format("pid {}, sm {}%, memory {}%, encoder {}%, decoder {}% over the row's time", p.pid(),
                           p.sm_util_pct(), p.memory_util_pct(), p.encoder_util_pct(), p.decoder_util_pct());
    write(r);
  }
}

}  // namespace

ExportResult write_csv(reader::TraceReader& reader, Output& out, ExportOptions options) {
  CsvWriter writer(reader.info(), out, std::move(options));
  reader.read([&](const reader::ChunkView& v) { writer.add(v); });
  return writer.finish(reader);
}

}  // namespace gpuscope::exporter
