// The trace file is created safely and fails safely.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <thread>

#include "container.h"
#include "trace_lock.h"
#include "trace_output.h"
#include "../support/temp_dir.h"

namespace gpuscope::capture {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST(TraceOutput, CreatesAPrivateFileEvenWithAnOpenUmask) {
  test::TempDir dir;
  const mode_t old = umask(0);
  TraceOutput out;
  std::string error;
  const bool created = out.create(dir.file("t.gpuscope"), &error);
  umask(old);
  ASSERT_TRUE(created) << error;
  struct stat st{};
  ASSERT_EQ(stat(dir.file("t.gpuscope").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(TraceOutput, RefusesASymlinkAtThePath) {
  test::TempDir dir;
  ASSERT_EQ(symlink(dir.file("target").c_str(), dir.file("t.gpuscope").c_str()), 0);
  TraceOutput out;
  std::string error;
  EXPECT_FALSE(out.create(dir.file("t.gpuscope"), &error));
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(dir.file("target")));  // never followed
}

TEST(TraceOutput, RefusesAFifoOrAnExistingFile) {
  test::TempDir dir;
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  std::ofstream(dir.file("existing")) << "someone else's data";
  for (const char* name : {"fifo", "existing"}) {
    TraceOutput out;
    std::string error;
    EXPECT_FALSE(out.create(dir.file(name), &error)) << name;
    EXPECT_NE(error.find("already exists there (refused"), std::string::npos) << error;
  }
  std::ifstream in(dir.file("existing"));
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "someone else's data");
}

TEST(TraceOutput, UnwritableDirectoryIsAClearError) {
  TraceOutput out;
  std::string error;
  EXPECT_FALSE(out.create("/proc/no-such-dir/t.gpuscope", &error));
  EXPECT_NE(error.find("/proc/no-such-dir/t.gpuscope"), std::string::npos) << error;
}

// Runs `body` on a thread of its own under RLIMIT_FSIZE = `limit` bytes:
// past it the kernel refuses writes (EFBIG) and sends the thread SIGXFSZ,
// the same failure a full disk gives. The thread blocks SIGXFSZ when asked
// (the writer thread does; the thread that loads the library does not, and
// the signal would end this test program). Returns whether a SIGXFSZ is
// left pending.
bool on_thread_under_file_size_limit(rlim_t limit, bool block_sigxfsz, const std::function<void()>& body) {
  bool pending_after = false;
  std::thread writer([&] {
    sigset_t xfsz;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    if (block_sigxfsz) pthread_sigmask(SIG_BLOCK, &xfsz, nullptr);
    rlimit old{};
    getrlimit(RLIMIT_FSIZE, &old);
    rlimit small = old;
    small.rlim_cur = limit;
    setrlimit(RLIMIT_FSIZE, &small);
    body();
    setrlimit(RLIMIT_FSIZE, &old);
    sigset_t pending;
    sigpending(&pending);
    pending_after = sigismember(&pending, SIGXFSZ) == 1;
    timespec zero{};
    if (pending_after) sigtimedwait(&xfsz, nullptr, &zero);  // not into the next test
  });
  writer.join();
  return pending_after;
}

TEST(TraceOutput, AWriteFailureCutsBackToTheLastCompleteAppend) {
  test::TempDir dir;
  const std::string path = dir.file("t.gpuscope");
  bool ok_first = false, ok_second = true;
  std::string failure;
  const bool pending = on_thread_under_file_size_limit(4096, true, [&] {
    TraceOutput out;
    std::string error;
    if (!out.create(path, &error)) return;
    ok_first = out.append(bytes_of(std::string(3000, 'a')));
    ok_second = out.append(bytes_of(std::string(3000, 'b')));  // would end at 6000
    failure = out.failure();
  });
  EXPECT_TRUE(ok_first);
  EXPECT_FALSE(ok_second);
  EXPECT_FALSE(pending);
  EXPECT_NE(failure.find("File too large"), std::string::npos) << failure;
  EXPECT_EQ(std::filesystem::file_size(path), 3000u);
}

// The appends a trace starts with under a file-size limit: whether each
// landed, the failure, and whether a SIGXFSZ was left pending.
struct LimitedStart {
  bool header = false, frame = false;
  std::string failure;
  bool signal_pending = false;
};

LimitedStart start_under_file_size_limit(const std::string& path, rlim_t limit, bool thread_blocks_sigxfsz = false) {
  LimitedStart r;
  r.signal_pending = on_thread_under_file_size_limit(limit, thread_blocks_sigxfsz, [&] {
    TraceOutput out;
    std::string error;
    if (!out.create(path, &error)) return;
    r.header = out.append(bytes_of(std::string(sizeof(container::FileHeader), 'h')));
    r.frame = r.header && out.append(bytes_of(std::string(200, 'f')));
    r.failure = out.failure();
  });
  return r;
}

TEST(TraceOutput, AHeaderThatCannotBeWrittenLeavesNoFileAndNoSignal) {
  test::TempDir dir;
  const std::string path = dir.file("t.gpuscope");
  const LimitedStart r = start_under_file_size_limit(path, 16);  // the process survives: no SIGXFSZ
  EXPECT_FALSE(r.header);
  EXPECT_FALSE(r.signal_pending);
  EXPECT_NE(r.failure.find("File too large"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("the file was removed"), std::string::npos) << r.failure;
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceOutput, AFirstFrameThatCannotBeWrittenLeavesNoFile) {
  test::TempDir dir;
  const std::string path = dir.file("t.gpuscope");
  const LimitedStart r = start_under_file_size_limit(path, 100);
  EXPECT_TRUE(r.header);
  EXPECT_FALSE(r.frame);
  EXPECT_FALSE(r.signal_pending);
  EXPECT_NE(r.failure.find("the file was removed"), std::string::npos) << r.failure;
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A thread that blocks SIGXFSZ itself (the writer thread does) must not be
// left with one pending: it would strike when the thread unblocks it.
TEST(TraceOutput, AThreadBlockingSigxfszIsLeftNonePending) {
  test::TempDir dir;
  const LimitedStart r = start_under_file_size_limit(dir.file("t.gpuscope"), 16, /*thread_blocks_sigxfsz=*/true);
  EXPECT_FALSE(r.header);
  EXPECT_FALSE(r.signal_pending);
}

// What another process (`gpuscope run --force`) sees: 1 when the trace is
// locked as being written, 0 when not, 2 when it cannot look.
int live_as_seen_from_another_process(const std::string& path) {
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    pid_t writer = 0;
    _exit(fd < 0 ? 2 : container::trace_is_being_written(fd, &writer) && writer == getppid() ? 1 : 0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

TEST(TraceOutput, ATraceIsLockedAsLiveUntilClosed) {
  test::TempDir dir;
  const std::string path = dir.file("t.gpuscope");
  TraceOutput out;
  std::string error;
  ASSERT_TRUE(out.create(path, &error)) << error;
  ASSERT_TRUE(out.append(bytes_of(std::string(100, 'a'))));
  EXPECT_EQ(live_as_seen_from_another_process(path), 1);
  out.close();
  EXPECT_EQ(live_as_seen_from_another_process(path), 0);
}

}  // namespace
}  // namespace gpuscope::capture
