// What the reader opens: only regular files, without ever opening anything
// else (a FIFO's open waits for a writer; a device's open can act), and a
// sparse file without reading its holes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "trace_reader.h"
#include "trace_summary.h"
#include "../support/sample_trace.h"
#include "../support/temp_dir.h"

namespace gpuscope::reader {
namespace {

std::string open_error(const std::string& path) {
  TraceReader r;
  std::string error;
  EXPECT_FALSE(r.open_file(path, &error)) << path;
  return error;
}

// If the open blocked, a writer comes along after a while and unblocks it;
// the open must have returned before that.
TEST(ReaderFiles, AFifoIsRefusedWithoutWaitingForAWriter) {
  test::TempDir dir;
  const std::string fifo = dir.file("t.gpuscope");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> returned{false}, unblocked{false};
  std::thread writer([&] {
    for (int i = 0; i < 500 && !returned; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (returned) return;
    unblocked = true;
    const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) close(fd);
  });
  const std::string error = open_error(fifo);
  returned = true;
  writer.join();
  EXPECT_FALSE(unblocked) << "the open waited for a writer";
  EXPECT_EQ(error, fifo + " is a FIFO (named pipe), not a trace file");
}

TEST(ReaderFiles, EveryOtherKindOfFileIsOneLineSayingWhatItIs) {
  test::TempDir dir;
  EXPECT_EQ(open_error("/dev/null"), "/dev/null is a character device, not a trace file");
  EXPECT_EQ(open_error(dir.path()), dir.path() + " is a directory, not a trace file");
  const std::string socket_path = dir.file("s.gpuscope");
  const int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  ASSERT_EQ(bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(open_error(socket_path), socket_path + " is a socket, not a trace file");
  close(s);
  const std::string loop = dir.file("loop.gpuscope");
  ASSERT_EQ(symlink(loop.c_str(), loop.c_str()), 0);
  EXPECT_EQ(open_error(loop), "cannot open " + loop + ": Too many levels of symbolic links");
  EXPECT_EQ(open_error(dir.file("none")), "cannot open " + dir.file("none") + ": No such file or directory");
}

TEST(ReaderFiles, ASymlinkToATraceIsFollowed) {
  test::TempDir dir;
  const auto t = test::make_sample_trace(2, 10);
  std::ofstream(dir.file("t.gpuscope"), std::ios::binary)
      .write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  ASSERT_EQ(symlink("t.gpuscope", dir.file("latest.gpuscope").c_str()), 0);
  TraceReader r;
  std::string error;
  ASSERT_TRUE(r.open_file(dir.file("latest.gpuscope"), &error)) << error;
  EXPECT_EQ(summarize(r).stats.frames_read, 2u);
}

// Bytes this process has read through read(2)-like calls (/proc/self/io).
uint64_t bytes_read_so_far() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value)
    if (key == "rchar:") return value;
  return UINT64_MAX;
}

TEST(ReaderFiles, ASparseFileIsNotReadThroughItsHole) {
  test::TempDir dir;
  const std::string path = dir.file("sparse.gpuscope");
  const auto t = test::make_sample_trace(2, 10);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  constexpr uint64_t kHole = uint64_t{1} << 30;
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(t.bytes.size() + kHole)), 0);
  const int fd = open(path.c_str(), O_RDONLY);
  const off_t hole = lseek(fd, 0, SEEK_HOLE);
  close(fd);
  if (hole < 0 || static_cast<uint64_t>(hole) >= t.bytes.size() + kHole)
    GTEST_SKIP() << "this file system does not report holes";
  const uint64_t before = bytes_read_so_far();
  if (before == UINT64_MAX) GTEST_SKIP() << "no /proc/self/io";
  TraceReader r;
  std::string error;
  ASSERT_TRUE(r.open_file(path, &error)) << error;
  const TraceSummary s = summarize(r);
  EXPECT_EQ(s.stats.frames_read, 2u);
  EXPECT_EQ(s.stats.bytes_skipped, kHole);
  EXPECT_LT(bytes_read_so_far() - before, uint64_t{16} << 20);
}

}  // namespace
}  // namespace gpuscope::reader
