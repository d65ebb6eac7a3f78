// Where `gpuscope run` puts traces: the directory of a file or pattern is
// made when missing, every directory it makes is private whatever the umask,
// and --force never deletes the trace of a capture that is still running.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

ProcessResult gpuscope_run(const std::vector<std::string>& options, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {gpuscope_exe(), "run"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return run(argv, clean_env());
}

unsigned mode_of(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST(RunOutput, TheMissingDirectoriesOfAFileAreMade) {
  TempDir dir;
  const std::string out = dir.file("new/deeper/mine.gpuscope");
  const auto r = gpuscope_run({"-o", out}, {bin("behave"), "out:hi", "exit:5"});
  EXPECT_EQ(r.exit_code(), 5);
  EXPECT_EQ(count_lines_with(r.err, "cannot create"), 0) << r.err;
  ASSERT_TRUE(read_trace_file(out).summary.end.has_value()) << r.err;
  EXPECT_NE(r.err.find("gpuscope: trace " + out + " (pid "), std::string::npos) << r.err;
}

TEST(RunOutput, TheMissingDirectoryOfAPatternIsMade) {
  TempDir dir;
  const auto r = gpuscope_run({"-o", dir.file("new/x-%p.gpuscope")}, {bin("behave"), "out:hi"});
  EXPECT_EQ(r.exit_code(), 0);
  const auto traces = traces_in(dir.file("new"));
  ASSERT_EQ(traces.size(), 1u) << r.err;
  EXPECT_TRUE(read_trace_file(traces[0]).summary.end.has_value());
}

TEST(RunOutput, APatternInTheDirectoryIsRefusedBeforeTheRun) {
  TempDir dir;
  const auto r = gpuscope_run({"-o", dir.file("by-%h/x.gpuscope")}, {bin("behave"), "out:never"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("may name the file, not its directory"), std::string::npos) << r.err;
}

TEST(RunOutput, DirectoriesItMakesArePrivateUnderAnOpenUmask) {
  TempDir dir;
  const mode_t old = umask(0);
  const auto a = gpuscope_run({"-o", dir.file("a/b/")}, {bin("behave"), "return:0"});
  const auto c = gpuscope_run({"-o", dir.file("c/d/t.gpuscope")}, {bin("behave"), "return:0"});
  umask(old);
  EXPECT_EQ(a.exit_code(), 0) << a.err;
  EXPECT_EQ(c.exit_code(), 0) << c.err;
  for (const char* made : {"a", "a/b", "c", "c/d"}) EXPECT_EQ(mode_of(dir.file(made)), 0700u) << made;
  EXPECT_EQ(mode_of(dir.file("c/d/t.gpuscope")), 0600u);
}

TEST(RunOutput, ForceNeverDeletesTheTraceOfARunningCapture) {
  TempDir dir;
  const std::string out = dir.file("shared.gpuscope");
  Spawned first = spawn({gpuscope_exe(), "run", "-o", out, "--", bin("behave"), "sleep:1500", "out:first"},
                        clean_env());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(out) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto second = gpuscope_run({"--force", "-o", out}, {bin("behave"), "out:second"});
  EXPECT_EQ(second.exit_code(), 2);
  EXPECT_EQ(second.out, "");
  EXPECT_NE(second.err.find(out + " is the trace of a capture still running (pid "), std::string::npos)
      << second.err;
  const ProcessResult r = finish(first);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(count_lines_with(r.err, "no trace was written"), 0) << r.err;
  const TraceContents t = read_trace_file(out);
  ASSERT_TRUE(t.summary.end.has_value()) << t.error;
  EXPECT_EQ(t.summary.end->exit_status, 0);
  // Once that capture has ended, its trace is a finished one: --force replaces it.
  EXPECT_EQ(gpuscope_run({"-q", "--force", "-o", out}, {bin("behave"), "return:6"}).exit_code(), 6);
  ASSERT_TRUE(read_trace_file(out).summary.end.has_value());
  EXPECT_EQ(read_trace_file(out).summary.end->exit_status, 6);
}

}  // namespace
}  // namespace gpuscope::test
