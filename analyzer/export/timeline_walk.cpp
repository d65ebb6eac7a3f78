// The timeline walk: chunks, host calls and the end (timeline_walk.h).
#include "timeline_walk.h"

#include <map>
#include <memory>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "call_sites.h"
#include "sink_pipeline.h"
#include "trace_model.h"
#include "track_nesting.h"

namespace gpuscope::exporter {

namespace {

constexpr const char* kKindCategory[analyzer::kCallKinds] = {"cuda.sync",   "cuda.copy",   "cuda.memset",
                                                             "cuda.alloc",  "cuda.free",   "cuda.launch",
                                                             "cuda.init",   "cuda.other"};

uint64_t end_of(uint64_t start, uint64_t duration) { return start + duration; }

}  // namespace

TimelineWalk::TimelineWalk(const reader::FileInfo& file, TimelineSink& sink, ExportOptions options)
    : sink_(sink), summary_(file) {
  sites_ = options.symbols ? std::make_unique<CallSites>(summary_.current(), std::move(*options.symbols))
                           : std::make_unique<CallSites>(summary_.current());
}

TimelineWalk::~TimelineWalk() = default;

Label TimelineWalk::name(uint32_t id) {
  auto it = names_.find(id);
  if (it == names_.end()) it = names_.emplace(id, id == 0 ? "(unnamed)" : summary_.current().name_of(id)).first;
  return {it->second, id};
}

Args& TimelineWalk::fresh_args() {
  args_.clear();
  return args_;
}

analyzer::CallKind TimelineWalk::kind_of(uint32_t function_id) {
  if (const analyzer::CallKind* k = kinds_.find(function_id)) return *k;
  return kinds_[function_id] = analyzer::classify_function(summary_.current().name_of(function_id));
}

// ---- chunks ----

void TimelineWalk::add(const reader::ChunkView& v) {
  summary_.add(v);
  const fb::Chunk& c = *v.chunk;
  if (!origin_set_) {
    // The process start is the origin; without the metadata frame, the
    // first chunk's base time.
    origin_ns_ = c.metadata() != nullptr ? c.metadata()->start_monotonic_ns() : c.base_ns();
    origin_set_ = true;
    sink_.set_origin(origin_ns_);
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

void TimelineWalk::widen(const reader::ChunkView& v) {
  const auto span = [&](const auto& records) {
    for (const auto& r : records) last_ns_ = std::max(last_ns_, end_of(r.start_ns(), r.duration_ns()));
  };
  span(v.api_calls), span(v.copies), span(v.memsets), span(v.kernels), span(v.syncs), span(v.allocs);
  span(v.markers), span(v.graph_launches);
  for (const auto& g : v.gpu_samples) last_ns_ = std::max(last_ns_, g.start_ns());
}

// ---- host calls and their typed records ----

void TimelineWalk::index_typed(const reader::ChunkView& v) {
  typed_.clear();
  const auto index = [&](const auto& records) {
    for (const auto& r : records)
      if (r.source() == fb::Source::Host && r.correlation_id() != 0) typed_.add(r.correlation_id(), r);
  };
  index(v.copies), index(v.memsets), index(v.kernels), index(v.syncs), index(v.allocs), index(v.graph_launches);
}

// What is left from the previous chunk had this one to find its call (a
// drain can fall between a typed record and its call); now it is written
// on its own, and what this chunk left gets the next chunk.
void TimelineWalk::retire_typed() {
  previous_typed_.for_each_left([&](const TypedRecord& r) { unmatched_typed(r); });
  previous_typed_.adopt_left(typed_);
  typed_.clear();
}

std::optional<TypedRecord> TimelineWalk::take_typed(uint64_t correlation) {
  if (auto r = typed_.take(correlation)) return r;
  return previous_typed_.take(correlation);
}

void TimelineWalk::api_call(const fb::ApiCall& c) {
  uint64_t start = c.start_ns();
  const uint64_t end = end_of(c.start_ns(), c.duration_ns());
  const auto placed = thread_guard_[c.tid()].place(&start, end);
  const auto kind = kind_of(c.function_id());
  std::optional<TypedRecord> typed;
  if (c.depth() == 0 && c.correlation_id() != 0) typed = take_typed(c.correlation_id());
  api_call_args(c, placed == NestGuard::Placed::Ok, typed);
  Flow flow;
  if (flows_ && c.depth() == 0 && c.correlation_id() != 0 &&
      (kind == analyzer::CallKind::Launch || kind == analyzer::CallKind::Copy || kind == analyzer::CallKind::Memset))
    flow = {Flow::Kind::Out, c.correlation_id(), c.start_ns()};
  const Track track{pid_, c.tid()};
  const char* cat = kKindCategory[static_cast<size_t>(kind)];
  if (placed == NestGuard::Placed::Rejected) {
    ++stats_.unplaced;
    sink_.instant(track, name(c.function_id()), cat, c.start_ns(), args_, flow);
    return;
  }
  if (placed == NestGuard::Placed::Clamped) ++stats_.clamped;
  sink_.slice(track, name(c.function_id()), cat, start, end - start, args_, flow);
}

void TimelineWalk::api_call_args(const fb::ApiCall& c, bool placed_ok, const std::optional<TypedRecord>& typed) {
  Args& a = fresh_args();
  a.add_uint("correlation", c.correlation_id());
  a.add_int("result", c.result());
  a.add_uint("depth", c.depth());
  if (c.stream() != 0) a.add_hex("stream", c.stream());
  if (c.device() >= 0) a.add_int("device", c.device());
  if ((c.flags() & container::kCallDriverApi) != 0) a.add_bool("driver_api", true);
  if ((c.flags() & container::kCallCaptured) != 0) a.add_bool("captured_into_graph", true);
  if (c.repeat() != 0) a.add_uint("polls_coalesced", c.repeat());
  if (!placed_ok) a.add_uint("recorded_duration_ns", c.duration_ns());
  if (typed) typed_args(*typed);
  if (const std::string& site = sites_->text(c.stack_id()); !site.empty()) a.add_text("call_site", site);
}

// ---- the end ----

ExportResult TimelineWalk::finish(const reader::TraceReader& reader) {
  uint64_t end_ns = last_ns_;
  if (summary_.current().end) end_ns = std::max(end_ns, summary_.current().end->end_monotonic_ns);
  close_nvtx(end_ns);
  for (auto* table : {&previous_typed_, &typed_}) {
    table->for_each_left([&](const TypedRecord& r) { unmatched_typed(r); });
    table->clear();
  }
  write_capture_windows();
  ExportResult result;
  result.summary = summary_.finish(reader);
  write_process_names(result.summary);
  sink_.drain();
  stats_.events = sink_.events();
  result.stats = stats_;
  sink_.finish(result.summary, stats_, origin_ns_);
  return result;
}

namespace {

ExportResult walk_into(reader::TraceReader& reader, TimelineSink& sink, ExportOptions options) {
  TimelineWalk walk(reader.info(), sink, std::move(options));
  reader.read([&](const reader::ChunkView& v) { walk.add(v); });
  return walk.finish(reader);
}

}  // namespace

ExportResult walk_timeline(reader::TraceReader& reader, TimelineSink& sink, ExportOptions options) {
  const bool two_threads = options.threads == 0 ? std::thread::hardware_concurrency() > 1 : options.threads > 1;
  if (!two_threads) return walk_into(reader, sink, std::move(options));
  std::unique_ptr<PipelinedSink> encoder;
  try {
    encoder = std::make_unique<PipelinedSink>(sink);
  } catch (const std::system_error&) {
    return walk_into(reader, sink, std::move(options));  // no thread to be had (a limit): one will do
  }
  return walk_into(reader, *encoder, std::move(options));
}

}  // namespace gpuscope::exporter
