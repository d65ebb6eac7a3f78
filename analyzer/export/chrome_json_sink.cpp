// Chrome trace-event JSON (JSON Object Format), streamed event by event
// from the timeline walk (docs/export.md).
#include <unordered_map>

#include "chrome_trace.h"
#include "json_escape.h"
#include "timeline_sink.h"

namespace gpuscope::exporter {
namespace {

constexpr uint64_t kIdMask = (uint64_t{1} << 53) - 1;  // ids exact in JavaScript numbers

class ChromeJsonSink final : public TimelineSink {
 public:
  explicit ChromeJsonSink(Output& out) : out_(out) { out_.put("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["); }

  void set_origin(uint64_t origin_ns) override { origin_ns_ = origin_ns; }
  void thread_name(Track t, std::string_view name) override { metadata_event("thread_name", t, name); }
  void process_name(Track t, std::string_view name) override { metadata_event("process_name", t, name); }

  void slice(Track t, Label name, const char* category, uint64_t start, uint64_t duration, ArgsView args,
             Flow flow) override {
    begin(literal(name), 'X', start, t);
    out_.put(",\"dur\":");
    append_us(out_, static_cast<int64_t>(duration));
    category_and_args(category, args);
    put_flow(t, flow);
  }

  void instant(Track t, Label name, const char* category, uint64_t at, ArgsView args, Flow flow) override {
    begin(literal(name), 'i', at, t);
    out_.put(",\"s\":\"t\"");
    category_and_args(category, args);
    put_flow(t, flow);
  }

  void counter(Track t, Label name, uint64_t at, ArgsView values) override {
    begin(literal(name), 'C', at, t);
    put_args(values);
    end_event();
  }

  // Nestable async events ("b"/"e", matched by category, id and name).
  void async_range(Track t, Label name, const char* category, uint64_t id, uint64_t start, uint64_t end,
                   ArgsView args) override {
    const std::string& text = literal(name);
    begin(text, 'b', start, t);
    out_.format(",\"cat\":\"{}\",\"id\":{}", category, id & kIdMask);
    put_args(args);
    end_event();
    begin(text, 'e', end, t);
    out_.format(",\"cat\":\"{}\",\"id\":{}", category, id & kIdMask);
    end_event();
  }

  void finish(const reader::TraceSummary& s, const ExportStats& st, uint64_t origin_ns) override;
  uint64_t events() const override { return events_; }

 private:
  void begin(std::string_view name_json, char phase, uint64_t ns, Track t) {
    out_.put(events_ == 0 ? "\n{\"name\":" : ",\n{\"name\":");
    out_.put(name_json);
    out_.put(",\"ph\":\"");
    out_.put(phase);
    out_.put("\",\"ts\":");
    append_us(out_, static_cast<int64_t>(ns - origin_ns_));
    out_.put(",\"pid\":");
    out_.put_int(t.pid);
    out_.put(",\"tid\":");
    out_.put_uint(t.tid);
    ++events_;
  }
  void end_event() {
    out_.put('}');
    out_.maybe_flush();
  }
  void category_and_args(const char* category, ArgsView args) {
    out_.put(",\"cat\":\"");
    out_.put(category);
    out_.put('"');
    put_args(args);
    end_event();
  }
  void put_args(ArgsView args);
  // Flow v1: "s" binds to the slice enclosing it (the launch call), "f"
  // with "bp":"e" to the slice starting there (the device record).
  void put_flow(Track t, Flow flow) {
    if (flow.kind == Flow::Kind::None) return;
    const bool in = flow.kind == Flow::Kind::In;
    begin("\"launch\"", in ? 'f' : 's', flow.at, t);
    out_.format(",\"cat\":\"flow\",\"id\":{}{}", flow.id & kIdMask, in ? ",\"bp\":\"e\"" : "");
    end_event();
  }
  void metadata_event(const char* what, Track t, std::string_view value) {
    out_.put(events_ == 0 ? "\n{\"name\":\"" : ",\n{\"name\":\"");
    out_.format("{}\",\"ph\":\"M\",\"ts\":0,\"pid\":{},\"tid\":{},\"args\":{{\"name\":", what, t.pid, t.tid);
    append_json_string(out_, value);
    out_.put("}}");
    ++events_;
    out_.maybe_flush();
  }
  // Names from the string table are escaped once; made-up ones each time.
  const std::string& literal(Label name) {
    if (name.id == 0) return scratch_ = json_string(name.text);
    auto it = literals_.find(name.id);
    if (it == literals_.end()) it = literals_.emplace(name.id, json_string(name.text)).first;
    return it->second;
  }

  Output& out_;
  uint64_t origin_ns_ = 0, events_ = 0;
  std::unordered_map<uint32_t, std::string> literals_;
  std::string scratch_;
};

void ChromeJsonSink::put_args(ArgsView args) {
  if (args.empty()) return;
  out_.put(",\"args\":{");
  const char* sep = "\"";
  for (const Arg& a : args.list()) {
    out_.put(sep);
    sep = ",\"";
    out_.put(a.key_text());
    out_.put("\":");
    switch (a.type) {
      case Args::Type::Int: out_.put_int(static_cast<int64_t>(a.value)); break;
      case Args::Type::Uint: out_.put_uint(a.value); break;
      case Args::Type::Bool: out_.put(a.value != 0 ? "true" : "false"); break;
      case Args::Type::Text: append_json_string(out_, args.text(a)); break;
      case Args::Type::Milli: {
        const auto v = static_cast<int64_t>(a.value);
        const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
        out_.format("{}{}.{:03}", v < 0 ? "-" : "", mag / 1000, mag % 1000);
        break;
      }
    }
  }
  out_.put('}');
}

void ChromeJsonSink::finish(const reader::TraceSummary& s, const ExportStats& st, uint64_t origin_ns) {
  out_.put("\n],\n\"metadata\":{\"source\":\"gpuscope\",\"clock\":\"CLOCK_MONOTONIC\"");
  out_.format(",\"origin_monotonic_ns\":{},\"trace_format\":\"{}.{}\"", origin_ns, s.file.format_major,
              s.file.format_minor);
  if (s.process) {
    out_.format(",\"pid\":{},\"exe\":", s.process->pid);
    append_json_string(out_, s.process->exe);
    out_.put(",\"gpuscope_version\":");
    append_json_string(out_, s.process->gpuscope_version);
  }
  out_.format(",\"simulated\":{},\"complete\":{}", s.on_simulated_gpu(), s.end.has_value() && s.problems.empty());
  out_.format(",\"records\":{},\"events\":{},\"clamped_spans\":{},\"instants_for_unnestable_spans\":{}"
              ",\"extra_stream_lanes\":{},\"host_records_without_call\":{},\"unmatched_nvtx_ends\":{}"
              ",\"unterminated_nvtx_ranges\":{}",
              st.records, st.events, st.clamped, st.unplaced, st.extra_lanes, st.unmatched_records,
              st.unmatched_pops, st.unterminated);
  out_.put(",\"problems\":[");
  for (size_t i = 0; i < s.problems.size(); ++i) {
    if (i != 0) out_.put(',');
    append_json_string(out_, reader::describe(s.problems[i]));
  }
  out_.put("]}}\n");
  out_.flush();
}

}  // namespace

ExportResult write_chrome_trace(reader::TraceReader& reader, Output& out, ExportOptions options) {
  ChromeJsonSink sink(out);
  return walk_timeline(reader, sink, std::move(options));
}

}  // namespace gpuscope::exporter
