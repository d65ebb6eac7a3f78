// A buffered writer for the exporters: events are formatted into memory and
// written in large blocks, so output costs one write per ~256 KiB however
// many events there are, and memory stays that size whatever the trace.
#pragma once

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

namespace gpuscope::exporter {

class Output {
 public:
  explicit Output(std::FILE* file) : file_(file) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() { flush(); }

  fmt::memory_buffer& buffer() { return buf_; }
  void put(std::string_view s) { buf_.append(s.data(), s.data() + s.size()); }
  void put(char c) { buf_.push_back(c); }
  template <class... Args> void format(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(std::back_inserter(buf_), f, std::forward<Args>(args)...);
  }
  // Called between events: writes the buffer out once it is large.
  void maybe_flush() {
    if (buf_.size() >= kFlushBytes) flush();
  }
  void flush() {
    if (buf_.size() != 0 && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) failed_ = true;
    buf_.clear();
  }
  // True once a write failed (full disk, closed pipe): the caller reports it.
  bool failed() const { return failed_; }

 private:
  static constexpr size_t kFlushBytes = 256 * 1024;
  std::FILE* file_;
  fmt::memory_buffer buf_;
  bool failed_ = false;
};

// Nanoseconds as microseconds with three exact decimals ("12.345"), as the
// trace-event format wants ts and dur; printed from integers so no
// precision is lost however far from the origin.
inline void append_us(fmt::memory_buffer& out, int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t mag = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  fmt::format_to(std::back_inserter(out), "{}{}.{:03}", negative ? "-" : "", mag / 1000, mag % 1000);
}

}  // namespace gpuscope::exporter
