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
// by id instead of hashing the text of every event. The text of a name
// with an id stays valid until the walk ends (a pipelined sink encodes it
// later); made-up text only during the call.
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

// An argument's key: a literal, its length known where it is written.
struct Key {
  template <size_t N> constexpr Key(const char (&literal)[N]) : text(literal), size(N - 1) {
    static_assert(N - 1 <= 255, "a key is a short name");
  }
  const char* text;
  uint8_t size;
};

// One argument of an event.
enum class ArgType : uint8_t { Int, Uint, Bool, Text, Milli };  // Milli: thousandths, printed as x.yyy
struct Arg {
  const char* key;  // a literal: sinks may key caches by its address
  uint64_t value;   // Int and Milli: two's complement; Text: offset in the text
  uint32_t size;    // Text: length
  uint8_t key_size;
  ArgType type;
  std::string_view key_text() const { return {key, key_size}; }
};

// What a sink reads of an event's arguments: a run of Arg and the text
// their Text values point into. Args hands one out; a pipelined sink
// (sink_pipeline.h) keeps a copy of both in its batch.
class ArgsView {
 public:
  struct Range {
    const Arg *first, *last;
    const Arg* begin() const { return first; }
    const Arg* end() const { return last; }
    size_t size() const { return static_cast<size_t>(last - first); }
  };
  ArgsView(const Arg* first, const Arg* last, std::string_view text) : list_{first, last}, text_(text) {}
  bool empty() const { return list_.first == list_.last; }
  Range list() const { return list_; }
  std::string_view text(const Arg& a) const { return {text_.data() + a.value, a.size}; }
  std::string_view all_text() const { return text_; }

 private:
  Range list_;
  std::string_view text_;
};

// An event's arguments in the order they are added; text values live in one
// buffer, so a reused Args allocates nothing once warm. Adding is inline
// (a compare and a store): the walk adds ~5 per event.
class Args {
 public:
  using Type = ArgType;
  using Arg = exporter::Arg;
  Args() : list_(kInitialArgs) {}
  void clear() {
    size_ = 0;
    text_.clear();
  }
  void add_int(Key key, int64_t v) { push(key, Type::Int, static_cast<uint64_t>(v)); }
  void add_uint(Key key, uint64_t v) { push(key, Type::Uint, v); }
  void add_bool(Key key, bool v) { push(key, Type::Bool, v ? 1u : 0u); }
  void add_milli(Key key, int64_t v) { push(key, Type::Milli, static_cast<uint64_t>(v)); }
  void add_text(Key key, std::string_view v) {
    push(key, Type::Text, text_.size(), v.size());
    text_.append(v.data(), v.data() + v.size());
  }
  void add_hex(Key key, uint64_t v) {  // every call's address: no format string
    char text[kHexChars];
    add_text(key, hex_text(v, text));
  }
  // Three dimensions as "XxYxZ" (grid and block sizes).
  void add_dims(Key key, uint32_t x, uint32_t y, uint32_t z) {
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
    push(key, Type::Text, at, text_.size() - at);
  }

  bool empty() const { return size_ == 0; }
  ArgsView::Range list() const { return {list_.data(), list_.data() + size_}; }
  std::string_view text(const Arg& a) const { return {text_.data() + a.value, a.size}; }
  operator ArgsView() const { return {list_.data(), list_.data() + size_, {text_.data(), text_.size()}}; }

 private:
  static constexpr size_t kInitialArgs = 32;
  void push(Key key, Type type, uint64_t value, size_t size = 0) {
    if (size_ == list_.size()) list_.resize(2 * size_);
    list_[size_++] = {key.text, value, static_cast<uint32_t>(size), key.size, type};
  }
  std::vector<Arg> list_;  // its size is the capacity; size_ are in use
  size_t size_ = 0;
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
  virtual void slice(Track t, Label name, const char* category, uint64_t start, uint64_t duration, ArgsView args,
                     Flow flow = {}) = 0;
  virtual void instant(Track t, Label name, const char* category, uint64_t at, ArgsView args, Flow flow = {}) = 0;
  // One value per argument: each is a series of the counter `name`.
  virtual void counter(Track t, Label name, uint64_t at, ArgsView values) = 0;
  // A range that may overlap others on its thread (NVTX start/end): its own row.
  virtual void async_range(Track t, Label name, const char* category, uint64_t id, uint64_t start, uint64_t end,
                           ArgsView args) = 0;
  // The trace's end: what the walk counted, the summary, the time origin.
  virtual void finish(const reader::TraceSummary& s, const ExportStats& stats, uint64_t origin_ns) = 0;
  // Returns once every event handed over so far is encoded (a pipelined
  // sink encodes on another thread); events() and finish() come after it.
  virtual void drain() {}
  virtual uint64_t events() const = 0;  // events written so far
};

// Reads the whole trace through `sink` (timeline_walk.cpp).
ExportResult walk_timeline(reader::TraceReader& reader, TimelineSink& sink, ExportOptions options);

}  // namespace gpuscope::exporter
