#include "control_protocol.h"

#include <algorithm>
#include <cstring>

namespace gpuscope::control {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'S', 'C', 'P'};

uint32_t load_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t load_u64(const uint8_t* p) { return uint64_t{load_u32(p)} | uint64_t{load_u32(p + 4)} << 32; }

void store_le(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

bool known_type(uint8_t t) {
  return t == static_cast<uint8_t>(MessageType::Attach) || t == static_cast<uint8_t>(MessageType::Detach) ||
         t == static_cast<uint8_t>(MessageType::Status) || t == static_cast<uint8_t>(MessageType::Reply);
}

std::vector<uint8_t> frame(MessageType type, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(kMagic, kMagic + 4);
  out.push_back(kVersion);
  out.push_back(static_cast<uint8_t>(type));
  store_le(out, 0, 2);
  store_le(out, payload.size(), 4);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// Header checks plus "the frame is exactly header + payload".
ParseStatus open_frame(std::span<const uint8_t> bytes, Header* h, std::span<const uint8_t>* payload) {
  if (const ParseStatus s = parse_header(bytes, h); s != ParseStatus::Ok) return s;
  const size_t total = kHeaderSize + h->length;
  if (bytes.size() < total) return ParseStatus::Truncated;
  if (bytes.size() > total) return ParseStatus::TrailingBytes;
  *payload = bytes.subspan(kHeaderSize, h->length);
  return ParseStatus::Ok;
}

bool printable_line(std::span<const uint8_t> text) {
  return std::none_of(text.begin(), text.end(), [](uint8_t c) { return c == 0 || c == '\n' || c == '\r'; });
}

}  // namespace

const char* describe(ParseStatus status) {
  switch (status) {
    case ParseStatus::Ok: return "ok";
    case ParseStatus::Truncated: return "truncated message";
    case ParseStatus::BadMagic: return "not a gpuscope control message";
    case ParseStatus::BadVersion: return "unsupported control protocol version";
    case ParseStatus::BadType: return "unknown message type";
    case ParseStatus::TooLarge: return "message too large";
    case ParseStatus::Malformed: return "malformed message";
    case ParseStatus::TrailingBytes: return "bytes after the message";
  }
  return "?";
}

ParseStatus parse_header(std::span<const uint8_t> bytes, Header* out) {
  if (bytes.size() < kHeaderSize) return ParseStatus::Truncated;
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) return ParseStatus::BadMagic;
  if (bytes[4] != kVersion) return ParseStatus::BadVersion;
  if (!known_type(bytes[5]) || bytes[6] != 0 || bytes[7] != 0) return ParseStatus::BadType;
  const uint32_t length = load_u32(bytes.data() + 8);
  if (length > kMaxPayload) return ParseStatus::TooLarge;
  *out = Header{bytes[4], static_cast<MessageType>(bytes[5]), length};
  return ParseStatus::Ok;
}

ParseStatus parse_request(std::span<const uint8_t> bytes, Request* out) {
  Header h;
  std::span<const uint8_t> p;
  if (const ParseStatus s = open_frame(bytes, &h, &p); s != ParseStatus::Ok) return s;
  Request r;
  r.type = h.type;
  switch (h.type) {
    case MessageType::Detach:
    case MessageType::Status:
      if (!p.empty()) return ParseStatus::Malformed;
      break;
    case MessageType::Attach: {
      if (p.size() < 8 + 2) return ParseStatus::Malformed;  // a path is at least "/x"
      r.duration_ms = load_u64(p.data());
      const auto path = p.subspan(8);
      if (r.duration_ms > kMaxDurationMs || path[0] != '/' || path.size() > kMaxPath || !printable_line(path))
        return ParseStatus::Malformed;
      r.path.assign(path.begin(), path.end());
      break;
    }
    default:
      return ParseStatus::BadType;  // a reply is not a request
  }
  *out = std::move(r);
  return ParseStatus::Ok;
}

ParseStatus parse_reply(std::span<const uint8_t> bytes, Reply* out) {
  Header h;
  std::span<const uint8_t> p;
  if (const ParseStatus s = open_frame(bytes, &h, &p); s != ParseStatus::Ok) return s;
  if (h.type != MessageType::Reply) return ParseStatus::BadType;
  if (p.size() < 2 || p[0] > 1 || p[1] > 1 || p.size() - 2 > kMaxReplyText || !printable_line(p.subspan(2)))
    return ParseStatus::Malformed;
  out->ok = p[0] == 1;
  out->state = static_cast<ProcessState>(p[1]);
  out->text.assign(p.begin() + 2, p.end());
  return ParseStatus::Ok;
}

std::vector<uint8_t> encode_request(const Request& r) {
  std::vector<uint8_t> payload;
  if (r.type == MessageType::Attach) {
    const auto* path = reinterpret_cast<const uint8_t*>(r.path.data());
    if (r.path.empty() || r.path[0] != '/' || r.path.size() > kMaxPath || r.duration_ms > kMaxDurationMs ||
        !printable_line({path, r.path.size()}))
      return {};
    store_le(payload, r.duration_ms, 8);
    payload.insert(payload.end(), path, path + r.path.size());
  } else if (r.type == MessageType::Reply) {
    return {};
  }
  return frame(r.type, payload);
}

std::vector<uint8_t> encode_reply(const Reply& r) {
  std::vector<uint8_t> payload = {static_cast<uint8_t>(r.ok ? 1 : 0), static_cast<uint8_t>(r.state)};
  for (char c : r.text) {
    if (payload.size() - 2 >= kMaxReplyText) break;
    payload.push_back(c == '\0' || c == '\n' || c == '\r' ? ' ' : static_cast<uint8_t>(c));
  }
  return frame(MessageType::Reply, payload);
}

}  // namespace gpuscope::control
