// The trace file is created safely and fails safely.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <thread>

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

// RLIMIT_FSIZE makes the kernel refuse writes past a size (EFBIG) and send
// SIGXFSZ, which this thread blocks: the same failure a full disk gives.
TEST(TraceOutput, AWriteFailureCutsBackToTheLastCompleteAppend) {
  test::TempDir dir;
  const std::string path = dir.file("t.gpuscope");
  bool ok_first = false, ok_second = true;
  std::string failure;
  std::thread writer([&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    rlimit old{};
    getrlimit(RLIMIT_FSIZE, &old);
    rlimit small = old;
    small.rlim_cur = 4096;
    setrlimit(RLIMIT_FSIZE, &small);
    TraceOutput out;
    std::string error;
    if (out.create(path, &error)) {
      ok_first = out.append(bytes_of(std::string(3000, 'a')));
      ok_second = out.append(bytes_of(std::string(3000, 'b')));  // would end at 6000
      failure = out.failure();
    }
    setrlimit(RLIMIT_FSIZE, &old);
    timespec zero{};
    sigtimedwait(&set, nullptr, &zero);  // consume the SIGXFSZ
  });
  writer.join();
  EXPECT_TRUE(ok_first);
  EXPECT_FALSE(ok_second);
  EXPECT_NE(failure.find("File too large"), std::string::npos) << failure;
  EXPECT_EQ(std::filesystem::file_size(path), 3000u);
}

}  // namespace
}  // namespace gpuscope::capture
