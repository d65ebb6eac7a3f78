// Perfetto's native protobuf trace (schemas/perfetto_trace.proto), written
// packet by packet from the timeline walk: memory holds one packet, the
// interning tables and the track ids, never the trace (docs/export.md).
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

#include <google/protobuf/io/coded_stream.h>

#include "chrome_trace.h"
#include "json_escape.h"
#include "perfetto_trace.pb.h"
#include "timeline_sink.h"

namespace gpuscope::exporter {
namespace {

namespace pb = gpuscope::perfetto;

constexpr uint32_t kSequence = 1;  // one writer: one packet sequence
constexpr uint32_t kTraceFieldPacket = (1 << 3) | 2;  // Trace.packet, length-delimited

struct TextHash {  // lookups by string_view, without a std::string per lookup
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class PerfettoSink final : public TimelineSink {
 public:
  explicit PerfettoSink(Output& out) : out_(out) {}

  void set_origin(uint64_t origin_ns) override { start(origin_ns); }
  void thread_name(Track t, std::string_view name) override { describe_thread(t, name); }
  void process_name(Track t, std::string_view name) override { describe_process(t.pid, name); }

  void slice(Track t, Label name, const char* category, uint64_t start, uint64_t duration, ArgsView args,
             Flow flow) override {
    const uint64_t track = thread_track(t);
    pb::TrackEvent* e = event(start, track, pb::TrackEvent::TYPE_SLICE_BEGIN);
    describe_event(e, name, category, args, flow);
    emit();
    event(start + duration, track, pb::TrackEvent::TYPE_SLICE_END);
    emit();
  }

  void instant(Track t, Label name, const char* category, uint64_t at, ArgsView args, Flow flow) override {
    pb::TrackEvent* e = event(at, thread_track(t), pb::TrackEvent::TYPE_INSTANT);
    describe_event(e, name, category, args, flow);
    emit();
  }

  // One counter track per series, "<name> <series>", under the process.
  void counter(Track t, Label name, uint64_t at, ArgsView values) override {
    for (const Arg& a : values.list()) {
      pb::TrackEvent* e = event(at, counter_track(t.pid, name.text, a.key), pb::TrackEvent::TYPE_COUNTER);
      if (a.type == Args::Type::Milli) e->set_double_counter_value(static_cast<double>(static_cast<int64_t>(a.value)) / 1000);
      else if (a.type == Args::Type::Uint) e->set_counter_value(static_cast<int64_t>(a.value));
      else e->set_counter_value(static_cast<int64_t>(a.value));
      emit();
    }
  }

  // A track of its own under the process, as Perfetto's async slices have.
  void async_range(Track t, Label name, const char* category, uint64_t /*id*/, uint64_t start, uint64_t end,
                   ArgsView args) override {
    const uint64_t parent = process_track(t.pid);
    const uint64_t track = next_uuid_++;
    pb::TrackDescriptor* d = packet_.mutable_track_descriptor();
    d->set_uuid(track);
    d->set_parent_uuid(parent);
    d->set_name(valid_utf8(name.text));
    emit();
    describe_event(event(start, track, pb::TrackEvent::TYPE_SLICE_BEGIN), name, category, args, {});
    emit();
    event(end, track, pb::TrackEvent::TYPE_SLICE_END);
    emit();
  }

  void finish(const reader::TraceSummary&, const ExportStats&, uint64_t) override {
    start(0);  // an empty trace is still a valid stream
    out_.flush();
  }
  uint64_t events() const override { return events_; }

 private:
  void start(uint64_t origin_ns);
  void emit();
  pb::TrackEvent* event(uint64_t ts, uint64_t track, pb::TrackEvent::Type type);
  void describe_event(pb::TrackEvent* e, Label name, const char* category, ArgsView args, Flow flow);
  void put_args(pb::TrackEvent* e, ArgsView args);
  uint64_t process_track(int64_t pid);
  uint64_t thread_track(Track t);
  uint64_t counter_track(int64_t pid, std::string_view name, std::string_view series);
  void describe_process(int64_t pid, std::string_view name);
  void describe_thread(Track t, std::string_view name);
  uint64_t name_iid(Label name);
  uint64_t category_iid(const char* category);
  uint64_t arg_iid(const char* key);
  void text_value(pb::DebugAnnotation* d, std::string_view text);

  Output& out_;
  pb::TracePacket packet_;  // the one being built, reused
  bool started_ = false;
  uint64_t events_ = 0, next_uuid_ = 1;
  std::map<int64_t, uint64_t> processes_;
  std::map<std::pair<int64_t, uint64_t>, uint64_t> threads_;
  std::unordered_map<std::string, uint64_t> counters_;
  std::unordered_map<uint32_t, uint64_t> names_by_id_;
  // Categories and argument names are the walk's string literals: keyed by
  // address, as hashing their text per event was a tenth of the time.
  std::unordered_map<const char*, uint64_t> categories_, arg_names_;
  std::unordered_map<std::string, uint64_t, TextHash, std::equal_to<>> names_by_text_, texts_;
};

// The first packet of the sequence: clears incremental state (interning),
// says timestamps are CLOCK_MONOTONIC ns (the trace's own clock, as
// recorded) and makes that the trace's clock, so nothing is converted.
void PerfettoSink::start(uint64_t origin_ns) {
  if (started_) return;
  started_ = true;
  pb::ClockSnapshot* clocks = packet_.mutable_clock_snapshot();
  pb::ClockSnapshot::Clock* c = clocks->add_clocks();
  c->set_clock_id(pb::BUILTIN_CLOCK_MONOTONIC);
  c->set_timestamp(origin_ns);
  clocks->set_primary_trace_clock(pb::BUILTIN_CLOCK_MONOTONIC);
  packet_.mutable_trace_packet_defaults()->set_timestamp_clock_id(pb::BUILTIN_CLOCK_MONOTONIC);
  packet_.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  emit();
}

// Appends the packet as one `Trace.packet` field: the file is a Trace
// message however many packets it has, and is never held whole.
void PerfettoSink::emit() {
  packet_.set_trusted_packet_sequence_id(kSequence);
  const size_t size = packet_.ByteSizeLong();
  uint8_t head[1 + 10];
  head[0] = kTraceFieldPacket;
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(size, head + 1);
  out_.put(std::string_view(reinterpret_cast<const char*>(head), static_cast<size_t>(end - head)));
  packet_.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out_.claim(size)));
  packet_.Clear();
  out_.maybe_flush();
}

pb::TrackEvent* PerfettoSink::event(uint64_t ts, uint64_t track, pb::TrackEvent::Type type) {
  start(0);
  if (type != pb::TrackEvent::TYPE_SLICE_END) ++events_;  // a slice is one event, as in the JSON
  packet_.set_timestamp(ts);
  packet_.set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  pb::TrackEvent* e = packet_.mutable_track_event();
  e->set_track_uuid(track);
  e->set_type(type);
  return e;
}

void PerfettoSink::describe_event(pb::TrackEvent* e, Label name, const char* category, ArgsView args, Flow flow) {
  e->set_name_iid(name_iid(name));
  e->add_category_iids(category_iid(category));
  put_args(e, args);
  if (flow.kind == Flow::Kind::Out) e->add_flow_ids(flow.id);
  if (flow.kind == Flow::Kind::In) e->add_terminating_flow_ids(flow.id);
}

void PerfettoSink::put_args(pb::TrackEvent* e, ArgsView args) {
  for (const Arg& a : args.list()) {
    pb::DebugAnnotation* d = e->add_debug_annotations();
    d->set_name_iid(arg_iid(a.key));
    switch (a.type) {
      case Args::Type::Int: d->set_int_value(static_cast<int64_t>(a.value)); break;
      case Args::Type::Uint: d->set_uint_value(a.value); break;
      case Args::Type::Bool: d->set_bool_value(a.value != 0); break;
      case Args::Type::Text: text_value(d, args.text(a)); break;
      case Args::Type::Milli: d->set_double_value(static_cast<double>(static_cast<int64_t>(a.value)) / 1000); break;
    }
  }
}

// ---- tracks: described when first used, described again when named ----

uint64_t PerfettoSink::process_track(int64_t pid) {
  auto [it, fresh] = processes_.try_emplace(pid, 0);
  if (!fresh) return it->second;
  it->second = next_uuid_++;
  describe_process(pid, {});
  return it->second;
}

void PerfettoSink::describe_process(int64_t pid, std::string_view name) {
  const uint64_t uuid = process_track(pid);  // (re-enters once, to describe it unnamed)
  start(0);
  pb::TrackDescriptor* d = packet_.mutable_track_descriptor();
  d->set_uuid(uuid);
  d->mutable_process()->set_pid(static_cast<int32_t>(pid));
  if (!name.empty()) d->mutable_process()->set_process_name(valid_utf8(name));
  emit();
}

uint64_t PerfettoSink::thread_track(Track t) {
  auto [it, fresh] = threads_.try_emplace({t.pid, t.tid}, 0);
  if (!fresh) return it->second;
  it->second = next_uuid_++;
  describe_thread(t, {});
  return it->second;
}

void PerfettoSink::describe_thread(Track t, std::string_view name) {
  const uint64_t uuid = thread_track(t);
  const uint64_t parent = process_track(t.pid);
  pb::TrackDescriptor* d = packet_.mutable_track_descriptor();
  d->set_uuid(uuid);
  d->set_parent_uuid(parent);
  d->mutable_thread()->set_pid(static_cast<int32_t>(t.pid));
  d->mutable_thread()->set_tid(static_cast<int32_t>(t.tid));
  if (!name.empty()) d->mutable_thread()->set_thread_name(valid_utf8(name));
  emit();
}

uint64_t PerfettoSink::counter_track(int64_t pid, std::string_view name, std::string_view series) {
  std::string title = fmt::format("{} {}", name, series);
  auto it = counters_.find(fmt::format("{}\n{}", pid, title));
  if (it != counters_.end()) return it->second;
  const uint64_t parent = process_track(pid);
  const uint64_t uuid = next_uuid_++;
  counters_.emplace(fmt::format("{}\n{}", pid, title), uuid);
  pb::TrackDescriptor* d = packet_.mutable_track_descriptor();
  d->set_uuid(uuid);
  d->set_parent_uuid(parent);
  d->set_name(valid_utf8(title));
  d->mutable_counter();
  emit();
  return uuid;
}

// ---- interning: a new string goes into the packet that first uses it ----

// The iid of `key` in `table`; the first time a new one, first + k * step,
// added to the packet by `add` (so a packet gets InternedData only when
// it brings something new).
template <class Table, class Key, class Add>
uint64_t intern(Table& table, const Key& key, std::string_view text, uint64_t first, uint64_t step, Add add) {
  auto it = table.find(key);
  if (it != table.end()) return it->second;
  const uint64_t iid = first + table.size() * step;
  table.emplace(key, iid);
  pb::InternedName* n = add();
  n->set_iid(iid);
  n->set_name(valid_utf8(text));
  return iid;
}

uint64_t PerfettoSink::name_iid(Label name) {
  // Names from the string table by id (even iids); made-up ones ("memset")
  // by text (odd iids): one text may get two iids, an iid never two texts.
  const auto add = [this] { return packet_.mutable_interned_data()->add_event_names(); };
  if (name.id != 0) return intern(names_by_id_, name.id, name.text, 2, 2, add);
  return intern(names_by_text_, name.text, name.text, 1, 2, add);
}

uint64_t PerfettoSink::category_iid(const char* category) {
  return intern(categories_, category, category, 1, 1,
                [this] { return packet_.mutable_interned_data()->add_event_categories(); });
}

uint64_t PerfettoSink::arg_iid(const char* key) {
  return intern(arg_names_, key, key, 1, 1,
                [this] { return packet_.mutable_interned_data()->add_debug_annotation_names(); });
}

// Argument values (call sites, kernel names, streams, grids) repeat from
// call to call: they are written once and referred to. Short ones (enum
// names) cost less inline than a reference; past kMaxTexts distinct values
// (addresses, mostly) the table stops growing, so memory stays bounded.
void PerfettoSink::text_value(pb::DebugAnnotation* d, std::string_view text) {
  static constexpr size_t kMinInterned = 8, kMaxTexts = size_t{1} << 16;
  if (text.size() < kMinInterned) {
    d->set_string_value(valid_utf8(text));
    return;
  }
  auto it = texts_.find(text);
  if (it == texts_.end()) {
    if (texts_.size() >= kMaxTexts) {
      d->set_string_value(valid_utf8(text));
      return;
    }
    it = texts_.emplace(text, texts_.size() + 1).first;
    pb::InternedString* s = packet_.mutable_interned_data()->add_debug_annotation_string_values();
    s->set_iid(it->second);
    s->set_str(valid_utf8(text));
  }
  d->set_string_value_iid(it->second);
}

}  // namespace

ExportResult write_perfetto_trace(reader::TraceReader& reader, Output& out, ExportOptions options) {
  PerfettoSink sink(out);
  return walk_timeline(reader, sink, std::move(options));
}

}  // namespace gpuscope::exporter
