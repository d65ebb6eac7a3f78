#include "json_stream.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gpuscope::importer {
namespace {

constexpr size_t kWindowBytes = size_t{4} << 20;
constexpr size_t kInputBytes = size_t{1} << 20;

class PlainStream final : public ByteStream {
 public:
  explicit PlainStream(std::unique_ptr<reader::ByteSource> s) : source_(std::move(s)) {}
  long read(char* out, size_t n, std::string* error) override {
    const uint64_t left = source_->size() - offset_;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(left, n));
    if (take == 0) return 0;
    if (!source_->read(offset_, out, take)) {
      *error = "read failed at offset " + std::to_string(offset_);
      return -1;
    }
    offset_ += take;
    return static_cast<long>(take);
  }

 private:
  std::unique_ptr<reader::ByteSource> source_;
  uint64_t offset_ = 0;
};

// zlib's inflate with gzip framing; a file of several gzip members (as
// concatenated .gz files are) reads as their concatenation.
class GzipStream final : public ByteStream {
 public:
  explicit GzipStream(std::unique_ptr<reader::ByteSource> s) : source_(std::move(s)), input_(kInputBytes) {
    ok_ = inflateInit2(&z_, 15 + 16) == Z_OK;
  }
  ~GzipStream() override {
    if (ok_) inflateEnd(&z_);
  }
  long read(char* out, size_t n, std::string* error) override {
    if (!ok_) return fail(error, "zlib could not be initialized");
    if (!pending_damage_.empty()) return fail(error, std::exchange(pending_damage_, {}));
    const size_t want = std::min<size_t>(n, UINT32_MAX);
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(want);
    std::string damage;
    while (z_.avail_out > 0 && !done_ && damage.empty()) {
      if (z_.avail_in == 0 && !refill(&damage)) break;
      if (z_.avail_in == 0) {  // no more input before the gzip stream ended
        if (!in_member_) break;
        damage = "truncated gzip data: the compressed stream ends at offset " + std::to_string(offset_);
        break;
      }
      in_member_ = true;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        in_member_ = false;
        inflateReset(&z_);
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        const uint64_t at = offset_ - z_.avail_in;
        damage = std::string("corrupt gzip data at compressed offset ") + std::to_string(at) + ": " +
                 (z_.msg != nullptr ? z_.msg : "inflate failed");
      }
    }
    const size_t produced = want - z_.avail_out;
    if (damage.empty()) return static_cast<long>(produced);
    // What was inflated before the damage is the document's: handed out
    // first, the damage on the next read.
    if (produced == 0) return fail(error, std::move(damage));
    pending_damage_ = std::move(damage);
    return static_cast<long>(produced);
  }

 private:
  bool refill(std::string* error) {
    const uint64_t left = source_->size() - offset_;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(left, input_.size()));
    if (take == 0) return true;
    if (!source_->read(offset_, input_.data(), take)) {
      *error = "read failed at offset " + std::to_string(offset_);
      return false;
    }
    offset_ += take;
    z_.next_in = reinterpret_cast<Bytef*>(input_.data());
    z_.avail_in = static_cast<uInt>(take);
    return true;
  }
  long fail(std::string* error, std::string what) {
    *error = std::move(what);
    done_ = true;
    return -1;
  }

  std::unique_ptr<reader::ByteSource> source_;
  std::vector<char> input_;
  z_stream z_{};
  uint64_t offset_ = 0;
  bool ok_ = false, done_ = false, in_member_ = false;
  std::string pending_damage_;
};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A member name as an error quotes it: short, and on one line whatever
// the file holds (the scanner does not reject control characters).
std::string quoted_name(std::string_view key) {
  constexpr size_t kShown = 64;
  std::string out = "\"";
  for (char c : key.substr(0, kShown)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return out + (key.size() > kShown ? "...\"" : "\"");
}

// Bytes a scan steps over without a look: inside a container everything
// but quotes and brackets, inside a string everything but the quote and
// the backslash. The NUL that pads the window's end stops both scans (a NUL
// inside the data only costs one more look).
constexpr std::array<bool, 256> inert_table(std::string_view stops) {
  std::array<bool, 256> t{};
  t.fill(true);
  t[0] = false;
  for (char c : stops) t[static_cast<unsigned char>(c)] = false;
  return t;
}
constexpr auto kInertInContainer = inert_table("\"{}[]");
constexpr auto kInertInString = inert_table("\"\\");

#if defined(__SSE2__)
// Where the quotes, backslashes and brackets are in the 64 bytes at p, one
// bit per byte ('{' and '[' differ only in bit 5, as do '}' and ']').
struct BlockMasks {
  uint64_t quote = 0, backslash = 0, open = 0, close = 0;
};
BlockMasks block_masks(const char* p) {
  BlockMasks m;
  const auto bits = [](__m128i v, char c, int k) {
    return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)))))
           << (16 * k);
  };
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
    m.quote |= bits(v, '"', k);
    m.backslash |= bits(v, '\\', k);
    m.open |= bits(folded, '{', k);
    m.close |= bits(folded, '}', k);
  }
  return m;
}

// Bit i: the parity of the bits 0..i of x (which bytes lie inside a string).
uint64_t prefix_xor(uint64_t x) {
  for (int shift = 1; shift < 64; shift *= 2) x ^= x << shift;
  return x;
}
#endif

}  // namespace

std::unique_ptr<ByteStream> plain_stream(std::unique_ptr<reader::ByteSource> source) {
  return std::make_unique<PlainStream>(std::move(source));
}
std::unique_ptr<ByteStream> gzip_stream(std::unique_ptr<reader::ByteSource> source) {
  return std::make_unique<GzipStream>(std::move(source));
}

TraceEventStream::TraceEventStream(ByteStream& in, EventFn on_event, MemberFn on_member)
    : in_(in), on_event_(std::move(on_event)), on_member_(std::move(on_member)), buf_(kWindowBytes + kElementPadding) {}

bool TraceEventStream::fill(size_t need) {
  if (end_ - pos_ >= need) return true;
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    base_ += pos_;
    end_ -= pos_;
    pos_ = 0;
  }
  if (need + kElementPadding > buf_.size()) {
    if (need > kMaxElementBytes + 1) return false;
    buf_.resize(std::max(need, std::min(buf_.size() * 2, kMaxElementBytes + 1)) + kElementPadding);
  }
  while (end_ < need && !eof_) {
    const long got = in_.read(buf_.data() + end_, buf_.size() - kElementPadding - end_, &read_error_);
    if (got <= 0) {
      eof_ = true;
      break;
    }
    end_ += static_cast<size_t>(got);
  }
  std::memset(buf_.data() + end_, 0, kElementPadding);
  return end_ - pos_ >= need;
}

bool TraceEventStream::skip_space() {
  for (;;) {
    while (pos_ < end_ && is_space(buf_[pos_])) ++pos_;
    if (pos_ < end_) return true;
    if (!fill(1)) return false;
  }
}

// The string starting at pos_ + from (its opening quote); *end is the
// length from pos_ through its closing quote. A backslash escapes the byte
// after it, whatever that is.
bool TraceEventStream::scan_string(size_t from, size_t* end) {
  size_t i = from + 1;
  for (;;) {
    const char* base = buf_.data() + pos_;
    while (kInertInString[static_cast<unsigned char>(base[i])]) ++i;
    if (pos_ + i >= end_) {
      if (!fill(i + 1)) return false;
      continue;
    }
    if (base[i] == '"') {
      *end = i + 1;
      return true;
    }
    i += base[i] == '\\' ? 2 : 1;
  }
}

// The object or array starting at pos_, when it ends within the bytes
// already read and holds no backslash: found 64 bytes at a time, the
// quotes' running parity telling which brackets lie inside strings. Any
// other case (escapes, the end not read yet, a scalar) is scan_value's,
// which finds the same end byte by byte.
bool TraceEventStream::scan_container_in_window(size_t* end) {
#if defined(__SSE2__)
  const char first = buf_[pos_];
  if (first != '{' && first != '[') return false;
  const size_t have = end_ - pos_;
  uint64_t inside_string = 0;  // all ones while a string runs on from the previous block
  int depth = 0;
  for (size_t at = 0; at < have; at += 64) {
    const BlockMasks m = block_masks(buf_.data() + pos_ + at);  // the padding covers a block past end_
    const uint64_t valid = have - at >= 64 ? ~uint64_t{0} : (uint64_t{1} << (have - at)) - 1;
    if ((m.backslash & valid) != 0) return false;
    const uint64_t strings = prefix_xor(m.quote & valid) ^ inside_string;
    inside_string = static_cast<uint64_t>(static_cast<int64_t>(strings) >> 63);
    for (uint64_t brackets = (m.open | m.close) & ~strings & valid; brackets != 0; brackets &= brackets - 1) {
      const int bit = __builtin_ctzll(brackets);
      if ((m.open >> bit & 1) != 0) ++depth;
      else if (--depth == 0) {
        *end = at + bit + 1;
        return true;
      }
    }
  }
#endif
  (void)end;
  return false;
}

// The value starting at pos_; *end is its length. Scalars end at the next
// delimiter; objects and arrays at their matching bracket.
bool TraceEventStream::scan_value(size_t from, size_t* end) {
  size_t i = from;
  int depth = 0;
  for (;;) {
    if (depth > 0)  // stops at the latest at the zero padding after end_
      while (kInertInContainer[static_cast<unsigned char>(buf_[pos_ + i])]) ++i;
    if (pos_ + i >= end_ && !fill(i + 1)) {
      if (depth == 0 && i > from) {  // a scalar ending the input
        *end = i;
        return true;
      }
      return false;
    }
    const char c = buf_[pos_ + i];
    if (c == '"') {
      if (!scan_string(i, &i)) return false;
      if (depth == 0) break;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (depth == 0) break;  // a scalar's end: the container closes
      if (--depth == 0) {
        ++i;
        break;
      }
    } else if (depth == 0 && (c == ',' || is_space(c))) break;
    ++i;
  }
  *end = i;
  return i > from;
}

bool TraceEventStream::fail(std::string* error, const std::string& what) {
  *error = !read_error_.empty() ? read_error_ : what + " at offset " + std::to_string(base_ + pos_);
  return false;
}

bool TraceEventStream::run(std::string* error) {
  while (state_ != State::Done && !stopped_)
    if (!step(error)) return false;
  return stopped_ || read_to_end(error);
}

// Reading on past the document's last byte lets the source check its own
// end: a gzip stream's checksum and length, which come after the data.
bool TraceEventStream::read_to_end(std::string* error) {
  while (!eof_) {
    pos_ = end_;
    fill(1);
  }
  return read_error_.empty() || fail(error, read_error_);
}

// One move of the top-level reader: the opening bracket, one member, or
// one event.
bool TraceEventStream::step(std::string* error) {
  if (!skip_space()) {
    if (state_ == State::Start) return fail(error, "empty document");
    return fail(error, state_ == State::Events ? "the traceEvents array is cut short" : "the document is cut short");
  }
  const char c = buf_[pos_];
  if (state_ == State::Start) {
    if (base_ + pos_ == 0 && fill(3) && std::memcmp(buf_.data(), "\xEF\xBB\xBF", 3) == 0) {
      pos_ += 3;  // a UTF-8 byte order mark, as sniff_format allows
      return true;
    }
    if (c != '{' && c != '[') return fail(error, "not a JSON object or array");
    top_is_array_ = c == '[';
    saw_trace_events_ = top_is_array_;
    state_ = top_is_array_ ? State::Events : State::Key;
    ++pos_;
    return true;
  }
  if (c == ',') {
    ++pos_;
    return true;
  }
  if (state_ == State::Events) {
    if (c == ']') {
      ++pos_;
      state_ = top_is_array_ ? State::Done : State::Key;
      return true;
    }
    size_t len = 0;
    if (!scan_container_in_window(&len) && !scan_value(0, &len))
      return fail(error, "an unterminated or oversized traceEvents element");
    if (!on_event_(std::string_view(buf_.data() + pos_, len), base_ + pos_)) stopped_ = true;
    pos_ += len;
    return true;
  }
  if (c == '}') {
    ++pos_;
    state_ = State::Done;
    return true;
  }
  size_t key_len = 0;
  if (c != '"' || !scan_string(0, &key_len)) return fail(error, "expected a member name");
  const std::string key(buf_.data() + pos_ + 1, key_len - 2);
  pos_ += key_len;
  if (!skip_space() || buf_[pos_] != ':') return fail(error, "expected ':' after " + quoted_name(key));
  ++pos_;
  if (!skip_space()) return fail(error, "the document is cut short");
  if (key == "traceEvents" && buf_[pos_] == '[') {
    saw_trace_events_ = true;
    state_ = State::Events;
    ++pos_;
    return true;
  }
  size_t len = 0;
  if (!scan_value(0, &len)) return fail(error, "an unterminated or oversized value of " + quoted_name(key));
  on_member_(key, std::string_view(buf_.data() + pos_, len), base_ + pos_);
  pos_ += len;
  return true;
}

}  // namespace gpuscope::importer
