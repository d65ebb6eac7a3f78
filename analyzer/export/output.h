// A buffered writer for the exporters: events are formatted into memory and
// written in large blocks, so output costs one write per ~256 KiB however
// many events there are, and memory stays that size whatever the trace
// (larger only while one piece, a protobuf packet, is larger).
#pragma once

#include <charconv>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <memory>
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
  explicit Output(std::FILE* file) : file_(file), buf_(new char[kCapacity]), cur_(buf_.get()), limit_(cur_ + kCapacity) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() { flush(); }

  // Every put checks its room with one compare and copies inline; fmt's
  // buffer appends were out of line and memmoved (a third of an export).
  template <size_t N> void put(const char (&literal)[N]) { put_bytes(literal, N - 1); }
  void put(std::string_view s) { put_bytes(s.data(), s.size()); }
  void put(char c) {
    if (cur_ == limit_) make_room(1);
    *cur_++ = c;
  }
  // What append_json_string writes through.
  void push_back(char c) { put(c); }
  void append(const char* first, const char* last) { put_bytes(first, static_cast<size_t>(last - first)); }
  // Room for exactly n bytes at the returned address (a serializer's).
  char* claim(size_t n) {
    if (static_cast<size_t>(limit_ - cur_) < n) make_room(n);
    char* at = cur_;
    cur_ += n;
    return at;
  }
  // Rare events only: formats into a scratch buffer first.
  template <class... Args> void format(fmt::format_string<Args...> f, Args&&... args) {
    scratch_.clear();
    fmt::format_to(fmt::appender(scratch_), f, std::forward<Args>(args)...);
    put_bytes(scratch_.data(), scratch_.size());
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
    if (size() >= kFlushBytes) flush();
  }
  void flush() {
    const size_t n = size();
    if (n != 0 && std::fwrite(buf_.get(), 1, n, file_) != n) failed_ = true;
    cur_ = buf_.get();
  }
  // True once a write failed (full disk, closed pipe): the caller reports it.
  bool failed() const { return failed_; }

 private:
  size_t size() const { return static_cast<size_t>(cur_ - buf_.get()); }
  void put_bytes(const char* p, size_t n) {
    if (static_cast<size_t>(limit_ - cur_) < n) make_room(n);
    std::memcpy(cur_, p, n);
    cur_ += n;
  }
  template <class Integer> void put_number(Integer v) {
    constexpr size_t kMaxDigits = 20;  // and a sign: 2^64 has 20 digits, -2^63 19
    if (static_cast<size_t>(limit_ - cur_) < kMaxDigits + 1) make_room(kMaxDigits + 1);
    cur_ = std::to_chars(cur_, cur_ + kMaxDigits + 1, v).ptr;
  }
  // Out of line: the stream is written in order, so the buffer can go out
  // in the middle of an event; only a piece larger than it makes it grow.
  [[gnu::noinline]] void make_room(size_t n) {
    flush();
    if (n <= static_cast<size_t>(limit_ - cur_)) return;
    buf_.reset(new char[n]);
    cur_ = buf_.get();
    limit_ = cur_ + n;
  }

  static constexpr size_t kFlushBytes = 256 * 1024;
  static constexpr size_t kCapacity = 2 * kFlushBytes;
  std::FILE* file_;
  std::unique_ptr<char[]> buf_;
  char *cur_, *limit_;
  fmt::memory_buffer scratch_;
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
