// JSON string escaping for the exporters. Trace strings (kernel names, NVTX
// messages, paths) come from hostile input: besides quotes, backslashes and
// control characters, invalid UTF-8 is replaced by U+FFFD, since a strict
// JSON parser (and Perfetto's) rejects the whole file for one bad byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuscope::exporter {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when the
// bytes there are not one (overlong, surrogate, beyond U+10FFFF, cut short).
inline size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 2;
  else if (b0 == 0xE0) n = 3, lo = 0xA0;
  else if (b0 >= 0xE1 && b0 <= 0xEC) n = 3;
  else if (b0 == 0xED) n = 3, hi = 0x9F;  // no UTF-16 surrogates
  else if (b0 >= 0xEE && b0 <= 0xEF) n = 3;
  else if (b0 == 0xF0) n = 4, lo = 0x90;
  else if (b0 >= 0xF1 && b0 <= 0xF3) n = 4;
  else if (b0 == 0xF4) n = 4, hi = 0x8F;  // nothing past U+10FFFF
  else return 0;
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

// `s` with each byte that is not part of valid UTF-8 replaced by U+FFFD,
// as the JSON has it: protobuf strings must be UTF-8 too (Perfetto's
// readers decode them as such).
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  size_t plain = 0;  // start of the run of valid bytes not yet copied
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
    } else if (const size_t n = utf8_sequence_length(s, i); n != 0) {
      i += n;
    } else {
      out.append(s.data() + plain, i - plain);
      out += "\xEF\xBF\xBD";
      plain = ++i;
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  return out;
}

// Appends `s` as a JSON string literal, quotes included.
template <class Out> void append_json_string(Out& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t plain = 0;  // start of the run of bytes that need no escaping
  const auto put = [&](std::string_view v) { out.append(v.data(), v.data() + v.size()); };
  const auto flush = [&](size_t to) { out.append(s.data() + plain, s.data() + to); };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (const size_t n = utf8_sequence_length(s, i); n != 0) {
        i += n;
        continue;
      }
    }
    flush(i);
    switch (c) {
      case '"': put(std::string_view("\\\"")); break;
      case '\\': put(std::string_view("\\\\")); break;
      case '\n': put(std::string_view("\\n")); break;
      case '\t': put(std::string_view("\\t")); break;
      case '\r': put(std::string_view("\\r")); break;
      default:
        if (c < 0x20) {
          const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
          out.append(esc, esc + 6);
        } else {
          put(std::string_view("\xEF\xBF\xBD"));  // U+FFFD for a byte that is not UTF-8
        }
    }
    plain = ++i;
  }
  flush(s.size());
  out.push_back('"');
}

inline std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_json_string(out, s);
  return out;
}

}  // namespace gpuscope::exporter
