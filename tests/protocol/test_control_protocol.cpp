// The control protocol parser (protocol/control_protocol.h): what a
// peer may send a process in standby, and everything it must reject.
#include <gtest/gtest.h>

#include "control_paths.h"
#include "control_protocol.h"

namespace gpuscope::control {
namespace {

std::vector<uint8_t> attach_frame(const std::string& path = "/tmp/t.gpuscope", uint64_t ms = 2500) {
  return encode_request(Request{MessageType::Attach, ms, path});
}

TEST(ControlProtocol, RequestsRoundTrip) {
  Request r;
  ASSERT_EQ(parse_request(attach_frame(), &r), ParseStatus::Ok);
  EXPECT_EQ(r.type, MessageType::Attach);
  EXPECT_EQ(r.duration_ms, 2500u);
  EXPECT_EQ(r.path, "/tmp/t.gpuscope");
  for (MessageType t : {MessageType::Detach, MessageType::Status}) {
    ASSERT_EQ(parse_request(encode_request(Request{t, 0, ""}), &r), ParseStatus::Ok);
    EXPECT_EQ(r.type, t);
  }
}

TEST(ControlProtocol, RepliesRoundTripAsOneLine) {
  Reply r;
  ASSERT_EQ(parse_reply(encode_reply(Reply{true, ProcessState::Capturing, "/x/y.gpuscope"}), &r), ParseStatus::Ok);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.state, ProcessState::Capturing);
  EXPECT_EQ(r.text, "/x/y.gpuscope");
  ASSERT_EQ(parse_reply(encode_reply(Reply{false, ProcessState::Idle, "a\nb\0c" + std::string(5000, 'x')}), &r),
            ParseStatus::Ok);
  EXPECT_EQ(r.text.size(), kMaxReplyText);
  EXPECT_EQ(r.text.find('\n'), std::string::npos);
}

TEST(ControlProtocol, TruncatedAtEveryLengthIsRejected) {
  const auto frame = attach_frame();
  Request r;
  for (size_t n = 0; n < frame.size(); ++n)
    EXPECT_EQ(parse_request(std::span(frame.data(), n), &r), ParseStatus::Truncated) << n;
}

TEST(ControlProtocol, ForeignVersionTypeAndFlagsAreRejected) {
  Request r;
  auto f = attach_frame();
  f[0] = 'X';
  EXPECT_EQ(parse_request(f, &r), ParseStatus::BadMagic);
  f = attach_frame();
  f[4] = 2;
  EXPECT_EQ(parse_request(f, &r), ParseStatus::BadVersion);
  f = attach_frame();
  f[5] = 9;
  EXPECT_EQ(parse_request(f, &r), ParseStatus::BadType);
  f = attach_frame();
  f[6] = 1;
  EXPECT_EQ(parse_request(f, &r), ParseStatus::BadType);
  // A reply is not a request, nor a request a reply.
  EXPECT_EQ(parse_request(encode_reply(Reply{}), &r), ParseStatus::BadType);
  Reply reply;
  EXPECT_EQ(parse_reply(attach_frame(), &reply), ParseStatus::BadType);
}

TEST(ControlProtocol, OversizedIsRejectedFromTheHeaderAlone) {
  auto f = attach_frame();
  const uint32_t huge = kMaxPayload + 1;
  for (int i = 0; i < 4; ++i) f[8 + i] = static_cast<uint8_t>(huge >> (8 * i));
  Header h;
  EXPECT_EQ(parse_header(std::span(f.data(), kHeaderSize), &h), ParseStatus::TooLarge);
  f[8] = f[9] = f[10] = f[11] = 0xFF;
  EXPECT_EQ(parse_header(std::span(f.data(), kHeaderSize), &h), ParseStatus::TooLarge);
  EXPECT_TRUE(encode_request(Request{MessageType::Attach, 0, "/" + std::string(kMaxPath, 'a')}).empty());
}

TEST(ControlProtocol, MalformedPayloadsAreRejected) {
  Request r;
  auto with_payload = [](MessageType t, std::vector<uint8_t> p) {
    std::vector<uint8_t> f = {'G', 'S', 'C', 'P', kVersion, static_cast<uint8_t>(t), 0, 0};
    const auto n = static_cast<uint32_t>(p.size());
    for (int i = 0; i < 4; ++i) f.push_back(static_cast<uint8_t>(n >> (8 * i)));
    f.insert(f.end(), p.begin(), p.end());
    return f;
  };
  EXPECT_EQ(parse_request(with_payload(MessageType::Detach, {1}), &r), ParseStatus::Malformed);
  EXPECT_EQ(parse_request(with_payload(MessageType::Attach, {0, 0, 0, 0}), &r), ParseStatus::Malformed);
  std::vector<uint8_t> relative = {0, 0, 0, 0, 0, 0, 0, 0, 'a', 'b'};
  EXPECT_EQ(parse_request(with_payload(MessageType::Attach, relative), &r), ParseStatus::Malformed);
  std::vector<uint8_t> nul = {0, 0, 0, 0, 0, 0, 0, 0, '/', 'a', 0, 'b'};
  EXPECT_EQ(parse_request(with_payload(MessageType::Attach, nul), &r), ParseStatus::Malformed);
  std::vector<uint8_t> forever = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, '/', 'a'};
  EXPECT_EQ(parse_request(with_payload(MessageType::Attach, forever), &r), ParseStatus::Malformed);
  auto trailing = attach_frame();
  trailing.push_back(0);
  EXPECT_EQ(parse_request(trailing, &r), ParseStatus::TrailingBytes);
  EXPECT_TRUE(encode_request(Request{MessageType::Attach, 0, "relative"}).empty());
}

TEST(ControlPaths, SocketNamesAreExactlyPids) {
  pid_t pid = 0;
  EXPECT_TRUE(parse_socket_name("4242.sock", &pid));
  EXPECT_EQ(pid, 4242);
  for (const char* bad : {"x.sock", "42.sock.tmp", ".sock", "042.sock", "-1.sock", "0.sock", "42"})
    EXPECT_FALSE(parse_socket_name(bad, &pid)) << bad;
}

}  // namespace
}  // namespace gpuscope::control
