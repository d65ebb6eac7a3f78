// The control protocol between `gpuscope attach/detach` and a traced
// process in standby (docs/interception.md, "Standby and attach").
//
// Pure: bytes in, messages out; no sockets, no allocation beyond the
// decoded strings, so it is unit-tested and fuzzed on its own
// (tests/fuzz/fuzz_control.cpp). One request per connection, one reply.
//
// Frame (little-endian):  "GSCP" | version u8 | type u8 | flags u16 (0) | payload length u32 | payload
//   Attach (1):  duration_ms u64 (0: until detach) | absolute trace path (no NUL)
//   Detach (2):  empty
//   Status (3):  empty
//   Reply (0x81): ok u8 (0/1) | state u8 (0 idle, 1 capturing) | one line of text (no NUL, no newline)
// Anything else (other magic, version, type or flags, a payload over
// kMaxPayload, a length that disagrees with the bytes) is rejected whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gpuscope::control {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderSize = 12;
inline constexpr size_t kMaxPath = 4095;                   // PATH_MAX less the NUL
inline constexpr size_t kMaxPayload = 8 + kMaxPath;        // the largest request: an attach
inline constexpr size_t kMaxReplyText = 1024;
inline constexpr uint64_t kMaxDurationMs = 365ull * 86'400'000;

enum class MessageType : uint8_t { Attach = 1, Detach = 2, Status = 3, Reply = 0x81 };

enum class ParseStatus : uint8_t {
  Ok,
  Truncated,     // fewer bytes than the header or its length announces
  BadMagic,
  BadVersion,
  BadType,
  TooLarge,      // the announced payload is over kMaxPayload
  Malformed,     // a payload that does not fit its type
  TrailingBytes  // more bytes than the frame
};
const char* describe(ParseStatus status);

struct Header {
  uint8_t version = 0;
  MessageType type{};
  uint32_t length = 0;  // payload bytes
};

// The first kHeaderSize bytes: enough to know how much more to read, and to
// refuse an oversized or foreign message before reading its payload.
ParseStatus parse_header(std::span<const uint8_t> bytes, Header* out);

struct Request {
  MessageType type = MessageType::Status;
  uint64_t duration_ms = 0;  // Attach only
  std::string path;          // Attach only: absolute
};

enum class ProcessState : uint8_t { Idle = 0, Capturing = 1 };

struct Reply {
  bool ok = false;
  ProcessState state = ProcessState::Idle;
  std::string text;  // error line, or the trace path
};

// A whole frame, header included; exactly one message, nothing after it.
ParseStatus parse_request(std::span<const uint8_t> frame, Request* out);
ParseStatus parse_reply(std::span<const uint8_t> frame, Reply* out);

// Encoders clamp nothing: a request that cannot be encoded (relative or
// oversized path, duration out of range) returns an empty vector.
std::vector<uint8_t> encode_request(const Request& request);
// Text is cut to kMaxReplyText and stripped of NULs and line breaks.
std::vector<uint8_t> encode_reply(const Reply& reply);

}  // namespace gpuscope::control
