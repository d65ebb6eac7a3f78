// Standby and attach inside one process (preload/control/standby.h): idle
// is the paused flag check, each attach writes its own whole trace of just
// its window, and the control socket answers only well-formed requests.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>

#include "control_paths.h"
#include "control_server.h"
#include "recorder.h"
#include "session.h"
#include "standby.h"
#include "../support/silent_peers.h"
#include "../support/temp_dir.h"
#include "../support/trace_contents.h"

namespace gpuscope::standby {
namespace {

using control::MessageType;
using control::Reply;
using control::Request;

test::TempDir* g_dir = nullptr;

std::string control_dir() { return g_dir->path() + "/ctl"; }

// One control server per process: the whole suite shares it.
class Standby : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_dir = new test::TempDir;
    capture::SessionOptions o;
    o.cpu_sample_interval_ms = 0;  // exact record counts
    o.drain_interval_ms = 5;
    StandbyConfig config{o, capture::collect_process_metadata(), [] {
                           return std::vector<std::unique_ptr<capture::TraceSource>>();
                         }, control_dir()};
    std::string error;
    ASSERT_TRUE(start_standby(std::move(config), &error)) << error;
  }

  static void calls(int n) {
    const uint32_t fid = capture::session_strings().intern("cudaLaunchKernel");
    for (int i = 0; i < n; ++i) capture::ApiCallScope(fid).finish(0);
  }

  // The whole frame as the peer sends it; the reply, or none.
  static std::optional<Reply> exchange(const std::vector<uint8_t>& bytes, bool close_write = true) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = control::socket_path(control_dir(), getpid());
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      return std::nullopt;
    }
    if (!bytes.empty()) (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (close_write) shutdown(fd, SHUT_WR);
    std::vector<uint8_t> in(control::kHeaderSize + control::kMaxPayload);
    size_t got = 0;
    for (ssize_t r; (r = recv(fd, in.data() + got, in.size() - got, 0)) > 0;) got += static_cast<size_t>(r);
    close(fd);
    Reply reply;
    in.resize(got);
    if (control::parse_reply(in, &reply) != control::ParseStatus::Ok) return std::nullopt;
    return reply;
  }
};

TEST_F(Standby, IdleIsThePausedFlagCheckAndWritesNothing) {
  EXPECT_EQ(capture::current_phase(), capture::Phase::Paused);
  const uint32_t free_before = capture::free_thread_buffers();
  std::thread fresh([] {
    capture::ApiCallScope scope(1);
    EXPECT_FALSE(scope.active());
  });
  fresh.join();
  EXPECT_EQ(capture::free_thread_buffers(), free_before);  // no buffer claimed
  EXPECT_EQ(state(), control::ProcessState::Idle);
}

TEST_F(Standby, EachAttachWritesItsOwnTraceOfItsWindow) {
  for (int round = 1; round <= 2; ++round) {
    calls(7);  // idle: not recorded
    const std::string path = g_dir->file("attach-" + std::to_string(round) + ".gpuscope");
    std::string error, detached;
    ASSERT_TRUE(attach(path, 0, &error)) << error;
    EXPECT_EQ(state(), control::ProcessState::Capturing);
    EXPECT_FALSE(attach(g_dir->file("other.gpuscope"), 0, &error));  // one at a time
    EXPECT_NE(error.find("already attached"), std::string::npos) << error;
    calls(10 * round);
    ASSERT_TRUE(detach(&detached, &error)) << error;
    EXPECT_EQ(detached, path);
    EXPECT_EQ(capture::current_phase(), capture::Phase::Paused);
    calls(5);
    const test::TraceContents t = test::read_trace_file(path);
    ASSERT_TRUE(t.opened) << t.error;
    EXPECT_EQ(t.api_calls.size(), static_cast<size_t>(10 * round));
    ASSERT_TRUE(t.summary.end.has_value());
    EXPECT_EQ(t.summary.end->kind, fb::EndKind::Detached);
    EXPECT_EQ(t.summary.dropped_total(), 0u);
    const auto windows = std::count_if(t.markers.begin(), t.markers.end(), [](const fb::Marker& m) {
      return m.kind() == fb::MarkerKind::CaptureWindow;
    });
    EXPECT_EQ(windows, 1);
  }
  std::string error, path;
  EXPECT_FALSE(detach(&path, &error));
}

TEST_F(Standby, DurationEndsTheTraceByItself) {
  const std::string path = g_dir->file("timed.gpuscope");
  std::string error;
  ASSERT_TRUE(attach(path, 150, &error)) << error;
  calls(3);
  for (int i = 0; i < 200 && state() == control::ProcessState::Capturing; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(state(), control::ProcessState::Idle);
  const test::TraceContents t = test::read_trace_file(path);
  EXPECT_EQ(t.api_calls.size(), 3u);
  ASSERT_TRUE(t.summary.end.has_value());
  EXPECT_EQ(t.summary.end->kind, fb::EndKind::Detached);
}

TEST_F(Standby, TheSocketServesWellFormedRequests) {
  const std::string path = g_dir->file("socket.gpuscope");
  auto r = exchange(control::encode_request(Request{MessageType::Attach, 0, path}));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->ok) << r->text;
  r = exchange(control::encode_request(Request{MessageType::Status, 0, ""}));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->state, control::ProcessState::Capturing);
  EXPECT_EQ(r->text, path);
  r = exchange(control::encode_request(Request{MessageType::Detach, 0, ""}));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->ok) << r->text;
  EXPECT_EQ(r->text, path);
  r = exchange(control::encode_request(Request{MessageType::Attach, 0, "/nonexistent-dir/x.gpuscope"}));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->ok);  // the process cannot open it: one line says why
  EXPECT_FALSE(r->text.empty());
  EXPECT_EQ(state(), control::ProcessState::Idle);
}

TEST_F(Standby, GarbageTruncatedOversizedAndSilentPeersAreDropped) {
  const uint64_t rejected = control::rejected_messages();
  auto r = exchange({'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '\n'});
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->text.find("rejected"), std::string::npos);
  auto oversized = control::encode_request(Request{MessageType::Status, 0, ""});
  oversized[8] = oversized[9] = oversized[10] = oversized[11] = 0xFF;
  r = exchange(oversized);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->text.find("too large"), std::string::npos) << r->text;
  auto truncated = control::encode_request(Request{MessageType::Attach, 0, "/tmp/x"});
  truncated.resize(truncated.size() - 2);
  r = exchange(truncated);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->text.find("truncated"), std::string::npos) << r->text;
  // A peer that sends nothing and keeps its end open is dropped on time.
  const auto start = std::chrono::steady_clock::now();
  r = exchange({}, /*close_write=*/false);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(control::kPeerTimeoutMs * 3));
  EXPECT_GE(control::rejected_messages(), rejected + 4);
  // And the channel still works.
  r = exchange(control::encode_request(Request{MessageType::Status, 0, ""}));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->ok);
}

// The server used to serve one peer at a time, each silent one for a whole
// kPeerTimeoutMs: 50 of them kept everyone else out for 43 s. The bounds
// below are ten times the timeout, far above what a loaded machine needs
// and far below what serving them in turn takes.
TEST_F(Standby, SilentPeersDelayNoOne) {
  for (const size_t crowd : {size_t{50}, control::kMaxPeers + 30}) {
    const std::vector<int> silent = test::silent_peers(control::socket_path(control_dir(), getpid()), crowd,
                                                       std::chrono::milliseconds(control::kPeerTimeoutMs * 10));
    EXPECT_EQ(silent.size(), crowd) << "connections not accepted while others were silent";
    const auto start = std::chrono::steady_clock::now();
    const auto r = exchange(control::encode_request(Request{MessageType::Status, 0, ""}));
    const auto took = std::chrono::steady_clock::now() - start;
    for (const int fd : silent) close(fd);
    ASSERT_TRUE(r.has_value()) << "with " << crowd << " silent peers";
    EXPECT_TRUE(r->ok) << r->text;
    EXPECT_LT(took, std::chrono::milliseconds(control::kPeerTimeoutMs * 10)) << "with " << crowd << " silent peers";
  }
}

TEST(ControlDir, OnlyAPrivateDirectoryOfOursIsAccepted) {
  test::TempDir dir;
  std::string error;
  const std::string ours = dir.file("ok");
  EXPECT_TRUE(control::ensure_private_dir(ours, true, &error)) << error;
  EXPECT_TRUE(control::ensure_private_dir(ours, false, &error)) << error;
  const std::string open = dir.file("open");
  ASSERT_EQ(mkdir(open.c_str(), 0755), 0);
  chmod(open.c_str(), 0755);
  EXPECT_FALSE(control::ensure_private_dir(open, true, &error));
  EXPECT_NE(error.find("755"), std::string::npos) << error;
  const std::string link = dir.file("link");
  ASSERT_EQ(symlink(ours.c_str(), link.c_str()), 0);
  EXPECT_FALSE(control::ensure_private_dir(link, true, &error));
  if (geteuid() == 0) {
    const std::string foreign = dir.file("foreign");
    ASSERT_EQ(mkdir(foreign.c_str(), 0700), 0);
    ASSERT_EQ(chown(foreign.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(control::ensure_private_dir(foreign, true, &error));
    EXPECT_NE(error.find("65534"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace gpuscope::standby
