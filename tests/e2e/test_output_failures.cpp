// Output problems cost the trace, never the program: a full filesystem, a
// file-size limit, an unwritable directory and a symlink at the trace path
// all leave the program's output and exit status exactly as without
// gpuscope, with one clear line on stderr.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

const std::vector<std::string> kWorkload = {"out:line one", "spin:1500", "out:line two", "exit:42"};

std::vector<std::string> behave_argv() {
  std::vector<std::string> argv = {bin("behave")};
  argv.insert(argv.end(), kWorkload.begin(), kWorkload.end());
  return argv;
}

void expect_program_unchanged(const ProcessResult& r) {
  EXPECT_EQ(r.out, "line one\nline two\n");
  EXPECT_EQ(r.exit_code(), 42);
}

bool namespaces_available() {
  return run({"unshare", "-rm", "true"}, clean_env()).exit_code() == 0;
}

std::string quoted(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += "'" + a + "' ";
  return out;
}

TEST(OutputFailures, FullFilesystemStopsTheTraceNotTheProgram) {
  if (!namespaces_available()) GTEST_SKIP() << "unshare -rm is not permitted here";
  TempDir mount_dir, keep_dir;
  const std::string m = mount_dir.path();
  const std::string copy = keep_dir.file("t.gpuscope");
  // In a private mount namespace: a 64 KiB tmpfs filled to its last page, so
  // the trace gets a few frames and then ENOSPC. The trace is copied out
  // before the namespace (and its tmpfs) goes away.
  const std::string script =
      "mount -t tmpfs -o size=64k tmpfs '" + m + "' || exit 90; "
      "dd if=/dev/zero of='" + m + "/filler' bs=4096 count=15 2>/dev/null; "
      "env LD_PRELOAD='" + capture_library() + "' GPUSCOPE_OUTPUT='" + m + "/t.gpuscope' " +
      quoted(behave_argv()) + "; status=$?; cp '" + m + "/t.gpuscope' '" + copy + "'; exit $status";
  const ProcessResult r = run({"unshare", "-rm", "sh", "-c", script}, clean_env());
  expect_program_unchanged(r);
  EXPECT_EQ(count_lines_with(r.err, "gpuscope:"), 1) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "No space left on device"), 1) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "the program continues untraced"), 1) << r.err;
  const TraceContents t = read_trace_file(copy);
  ASSERT_TRUE(t.summary.process.has_value()) << t.error;
  EXPECT_EQ(t.summary.stats.frames_corrupt, 0u);  // cut back to whole frames
}

TEST(OutputFailures, FileSizeLimitStopsTheTraceNotTheProgram) {
  TempDir dir;
  const std::string trace = dir.file("t.gpuscope");
  // 1 KiB limit; the shell itself is not traced, only the program.
  const std::string script = "ulimit -f 2 && exec env LD_PRELOAD='" + capture_library() +
                             "' GPUSCOPE_OUTPUT='" + trace + "' " + quoted(behave_argv());
  const ProcessResult r = run({"sh", "-c", script}, clean_env());
  expect_program_unchanged(r);
  EXPECT_EQ(count_lines_with(r.err, "gpuscope:"), 1) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "File too large"), 1) << r.err;
  // The file was cut back to whole frames: it reads, it says why it ends.
  const TraceContents t = read_trace_file(trace);
  ASSERT_TRUE(t.summary.process.has_value()) << t.error;
  EXPECT_EQ(t.summary.stats.frames_corrupt, 0u);
  EXPECT_LE(std::filesystem::file_size(trace), 1024u);
}

// A file-size limit stands in for a disk that is full when the trace is
// created: under 1 block the file header fails, under 512 bytes the first
// frame. The write must not raise SIGXFSZ in the program (the thread loading
// the library writes them), and no file a reader could not use is left.
TEST(OutputFailures, AFullDiskAtCreationLeavesNoFileAndTheProgramUnchanged) {
  for (const char* blocks : {"0", "1"}) {
    TempDir dir;
    const std::string trace = dir.file("t.gpuscope");
    const std::string script = std::string("ulimit -f ") + blocks + " && exec env LD_PRELOAD='" + capture_library() +
                               "' GPUSCOPE_OUTPUT='" + trace + "' " + quoted(behave_argv());
    const ProcessResult r = run({"sh", "-c", script}, clean_env());
    expect_program_unchanged(r);
    EXPECT_EQ(count_lines_with(r.err, "gpuscope:"), 1) << r.err;
    EXPECT_EQ(count_lines_with(r.err, "File too large (nothing readable was written: the file was removed); "
                                      "the program runs untraced"),
              1)
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(trace)) << blocks;
  }
}

// gpuscope's own line to a stderr that is a file at its size limit costs
// the line, never the program (no SIGXFSZ from gpuscope's write).
TEST(OutputFailures, ALineToAStderrFileAtItsSizeLimitCostsOnlyTheLine) {
  TempDir dir;
  const std::string script = "ulimit -f 0 && exec env LD_PRELOAD='" + capture_library() +
                             "' GPUSCOPE_OUTPUT=/proc/1/ " + quoted(behave_argv()) + " 2>'" + dir.file("err") + "'";
  const ProcessResult r = run({"sh", "-c", script}, clean_env());
  expect_program_unchanged(r);
  EXPECT_EQ(std::filesystem::file_size(dir.file("err")), 0u);
}

TEST(OutputFailures, UnwritableDirectoryLeavesTheProgramUntraced) {
  const ProcessResult plain = run(behave_argv(), clean_env());
  const ProcessResult r = run(behave_argv(), preload_env("/proc/1/"));
  expect_program_unchanged(r);
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(count_lines_with(r.err, "gpuscope: cannot create trace /proc/1/"), 1) << r.err;
  EXPECT_EQ(count_lines_with(r.err, "the program runs untraced"), 1) << r.err;
}

TEST(OutputFailures, SymlinkAtTheTracePathIsRefusedAndNeverFollowed) {
  TempDir dir;
  const std::string target = dir.file("victim");
  std::ofstream(target) << "precious";
  ASSERT_EQ(symlink(target.c_str(), dir.file("t.gpuscope").c_str()), 0);
  const ProcessResult r = run(behave_argv(), preload_env(dir.file("t.gpuscope")));
  expect_program_unchanged(r);
  EXPECT_EQ(count_lines_with(r.err, "symbolic link"), 1) << r.err;
  std::ifstream in(target);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "precious");
}

TEST(OutputFailures, OptOutLeavesNoTrace) {
  TempDir dir;
  const ProcessResult r = run(behave_argv(), preload_env(dir.path() + "/", {"GPUSCOPE_DISABLE=1"}));
  expect_program_unchanged(r);
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(traces_in(dir.path()).empty());
}

}  // namespace
}  // namespace gpuscope::test
