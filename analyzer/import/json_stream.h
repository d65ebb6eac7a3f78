// A Chrome/Kineto trace document read as a stream: the elements of its
// "traceEvents" array one at a time, and its other top-level members, from
// a window of the file that slides forward. Memory holds the window (and
// at most one element, however large), never the document: a 10 GB trace
// imports in the same few megabytes as a 10 MB one. The scanner only finds
// where each element ends (strings and nesting respected); parsing an
// element is the caller's (simdjson), which also rejects what is malformed
// inside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "byte_source.h"

namespace gpuscope::importer {

// Where the document's bytes come from: a plain file, or a gzip file
// inflated as it is read. read() returns the bytes put in `out` (0 at the
// end) or -1 with *error naming the damage and its offset.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  virtual long read(char* out, size_t n, std::string* error) = 0;
};
std::unique_ptr<ByteStream> plain_stream(std::unique_ptr<reader::ByteSource> source);
std::unique_ptr<ByteStream> gzip_stream(std::unique_ptr<reader::ByteSource> source);

// Bytes readable past every element handed out (simdjson's padding).
inline constexpr size_t kElementPadding = 64;
// The largest single element or top-level member accepted.
inline constexpr size_t kMaxElementBytes = size_t{256} << 20;

class TraceEventStream {
 public:
  // `element` has kElementPadding readable bytes after it; `offset` is
  // where it starts in the (inflated) document. Returning false stops.
  using EventFn = std::function<bool(std::string_view element, uint64_t offset)>;
  using MemberFn = std::function<void(std::string_view key, std::string_view value, uint64_t offset)>;

  TraceEventStream(ByteStream& in, EventFn on_event, MemberFn on_member);
  // Reads the document to its end. False with *error (one line, with the
  // offset) when it is not a trace document or is cut short or malformed;
  // what was handed out before stays handed out.
  bool run(std::string* error);
  bool saw_trace_events() const { return saw_trace_events_; }

 private:
  enum class State { Start, Key, Events, Done };
  bool fill(size_t need);  // make [pos_, pos_+need) available; false at the end
  bool skip_space();       // false at the end of input
  bool scan_container_in_window(size_t* end);  // a fast path of scan_value(0, end)
  bool scan_value(size_t from, size_t* end);
  bool scan_string(size_t from, size_t* end);
  bool step(std::string* error);
  bool read_to_end(std::string* error);
  bool fail(std::string* error, const std::string& what);

  ByteStream& in_;
  EventFn on_event_;
  MemberFn on_member_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;  // unread bytes are [pos_, end_)
  uint64_t base_ = 0;         // document offset of buf_[0]
  bool eof_ = false, top_is_array_ = false, saw_trace_events_ = false, stopped_ = false;
  std::string read_error_;
  State state_ = State::Start;
};

}  // namespace gpuscope::importer
