// Fuzz target: arbitrary bytes as a control message
// (protocol/control_protocol.h), as a request and as a reply.
// Nothing may crash or read out of bounds, and whatever parses must encode
// back to the very same bytes (so the process never acts on a message that
// means something other than what was sent). Run under libFuzzer
// (GPUSCOPE_FUZZ=ON) or replayed over seeds by replay_main.cpp.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "control_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope::control;
  const std::span<const uint8_t> bytes(data, size);
  Header header;
  const ParseStatus head = parse_header(bytes, &header);
  Request request;
  if (parse_request(bytes, &request) == ParseStatus::Ok) {
    if (head != ParseStatus::Ok || encode_request(request) != std::vector<uint8_t>(bytes.begin(), bytes.end()))
      std::abort();
  }
  Reply reply;
  if (parse_reply(bytes, &reply) == ParseStatus::Ok) {
    if (head != ParseStatus::Ok || encode_reply(reply) != std::vector<uint8_t>(bytes.begin(), bytes.end()))
      std::abort();
  }
  return 0;
}
