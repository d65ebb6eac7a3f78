// What the timeline exporters share: the walk over a trace's records
// (timeline_walk.h) decides tracks, nesting, arguments and flows once, and
// hands each event to a TimelineSink that only encodes it, as Chrome
// trace-event JSON (chrome_json_sink.cpp) or as Perfetto's protobuf
// TracePacket stream (perfetto_sink.cpp). docs/export.md.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "chrome_trace.h"
#include "output.h"
#include "trace_summary.h"

namespace gpuscope::exporter {

// A row of the timeline: a (pid, tid) pair, real or made up (timeline_walk.h).
struct Track {
  int64_t pid;
  uint64_t tid;
};

// Text, with its string-table id when it comes from the trace (0 when
// made up): sinks cache what they derive from a name (escaping, interning)
// by id instead of hashing the text of every event.
struct Label {
  std::string_view text;
  uint32_t id = 0;
};

// A flow arrow: Out leaves the event it is attached to (a launch call), In
// ends at it (the device work). `at` is where the JSON event binds it.
struct Flow {
  enum class Kind : uint8_t { None, Out, In };
  Kind kind = Kind::None;
  uint64_t id = 0;
  uint64_t at = 0;
};

// An event's arguments in the order they are added; text values live in one
// buffer, so a reused Args allocates nothing once warm.
class Args {
 public:
  enum class Type : uint8_t { Int, Uint, Bool, Text, Milli };  // Milli: thousandths, printed as x.yyy
  struct Arg {
    const char* key;
    Type type;
    uint64_t value;  // Int and Milli: two's complement; Text: offset in the buffer
    size_t size;     // Text: length
  };
  void clear() {
    list_.clear();
    text_.clear();
  }
  void add_int(const char* key, int64_t v) { list_.push_back({key, Type::Int, static_cast<uint64_t>(v), 0}); }
  void add_uint(const char* key, uint64_t v) { list_.push_back({key, Type::Uint, v, 0}); }
  void add_bool(const char* key, bool v) { list_.push_back({key, Type::Bool, v ? 1u : 0u, 0}); }
  void add_milli(const char* key, int64_t v) { list_.push_back({key, Type::Milli, static_cast<uint64_t>(v), 0}); }
  void add_text(const char* key, std::string_view v) {
    list_.push_back({key, Type::Text, text_.size(), v.size()});
    text_.append(v.data(), v.data() + v.size());
  }
  void add_hex(const char* key, uint64_t v) {  // every call's address: no format string
    char text[kHexChars];
    add_text(key, hex_text(v, text));
  }
  // Three dimensions as "XxYxZ" (grid and block sizes).
  void add_dims(const char* key, uint32_t x, uint32_t y, uint32_t z) {
    const size_t at = text_.size();
    const auto put = [&](uint32_t v) {
      char digits[10];  // 2^32 has 10
      text_.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
    };
    put(x);
    text_.push_back('x');
    put(y);
    text_.push_back('x');
    put(z);
    list_.push_back({key, Type::Text, at, text_.size() - at});
  }

  bool empty() const { return list_.empty(); }
  const std::vector<Arg>& list() const { return list_; }
  std::string_view text(const Arg& a) const { return {text_.data() + a.value, a.size}; }

 private:
  std::vector<Arg> list_;
  fmt::memory_buffer text_;
};

// One encoding of the timeline. Events come in file order, not time order;
// slices on one track come nested (a child before the parent that contains
// it, NestGuard), never partially overlapping.
class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  // The process start (CLOCK_MONOTONIC ns), once, before any event.
  virtual void set_origin(uint64_t origin_ns) = 0;
  virtual void thread_name(Track t, std::string_view name) = 0;
  virtual void process_name(Track t, std::string_view name) = 0;
  virtual void slice(Track t, Label name, const char* category, uint64_t start, uint64_t duration, const Args& args,
                     Flow flow = {}) = 0;
  virtual void instant(Track t, Label name, const char* category, uint64_t at, const Args& args, Flow flow = {}) = 0;
  // One value per argument: each is a series of the counter `name`.
  virtual void counter(Track t, Label name, uint64_t at, const Args& values) = 0;
  // A range that may overlap others on its thread (NVTX start/end): its own row.
  virtual void async_range(Track t, Label name, const char* category, uint64_t id, uint64_t start, uint64_t end,
                           const Args& args) = 0;
  // The trace's end: what the walk counted, the summary, the time origin.
  virtual void finish(const reader::TraceSummary& s, const ExportStats& stats, uint64_t origin_ns) = 0;
  virtual uint64_t events() const = 0;  // events written so far
};

// Reads the whole trace through `sink` (timeline_walk.cpp).
ExportResult walk_timeline(reader::TraceReader& reader, TimelineSink& sink, ExportOptions options);

}  // namespace gpuscope::exporter
