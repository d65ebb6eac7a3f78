// A buffered writer for the exporters: events are formatted into memory and
// written in large blocks, so output costs one write per ~256 KiB however
// many events there are, and memory stays that size whatever the trace.
#pragma once

#include <charconv>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <string_view>

#include <fmt/format.h>

namespace gpuscope::exporter {

// "0x..." in lowercase, written into `text` (backwards from its end).
inline constexpr size_t kHexChars = 18;
inline std::string_view hex_text(uint64_t v, char (&text)[kHexChars]) {
  char* p = text + kHexChars;
  do {
    *--p = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  *--p = 'x';
  *--p = '0';
  return {p, static_cast<size_t>(text + kHexChars - p)};
}

class Output {
 public:
  explicit Output(std::FILE* file) : file_(file) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() { flush(); }

  fmt::memory_buffer& buffer() { return buf_; }
  // A literal's length is a constant, so its copy is a few moves inline;
  // fmt's buffer::append is out of line and memmoves (a third of an export).
  template <size_t N> void put(const char (&literal)[N]) { put_bytes(literal, N - 1); }
  void put(std::string_view s) { put_bytes(s.data(), s.size()); }
  void put(char c) { buf_.push_back(c); }
  // fmt::appender writes straight into the buffer (a back_inserter goes
  // through fmt's intermediate buffer and copies: a third of the time).
  template <class... Args> void format(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(fmt::appender(buf_), f, std::forward<Args>(args)...);
  }
  // The hot path's numbers, written in place without a format string.
  void put_uint(uint64_t v) { put_number(v); }
  void put_int(int64_t v) { put_number(v); }
  void put_hex(uint64_t v) {
    char text[kHexChars];
    put(hex_text(v, text));
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
  void put_bytes(const char* p, size_t n) {
    const size_t at = buf_.size();
    buf_.resize(at + n);  // grows by doubling, then stays (flushed at kFlushBytes)
    std::memcpy(buf_.data() + at, p, n);
  }
  template <class Integer> void put_number(Integer v) {
    constexpr size_t kMaxDigits = 20;  // and a sign: 2^64 has 20 digits, -2^63 19
    const size_t at = buf_.size();
    buf_.reserve(at + kMaxDigits + 1);
    char* first = buf_.data() + at;
    const std::to_chars_result r = std::to_chars(first, first + kMaxDigits + 1, v);
    buf_.resize(at + static_cast<size_t>(r.ptr - first));
  }

  static constexpr size_t kFlushBytes = 256 * 1024;
  std::FILE* file_;
  fmt::memory_buffer buf_;
  bool failed_ = false;
};

// Nanoseconds as microseconds with three exact decimals ("12.345"), as the
// trace-event format wants ts and dur; printed from integers so no
// precision is lost however far from the origin.
inline void append_us(Output& out, int64_t ns) {
  const uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out.put('-');
  out.put_uint(mag / 1000);
  const unsigned frac = static_cast<unsigned>(mag % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.put(std::string_view(digits, 4));
}

}  // namespace gpuscope::exporter
