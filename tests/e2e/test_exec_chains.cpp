// Exec chains: a process that replaces itself with exec, possibly with the
// same program again (`env env true`, pyenv's shims), gets one trace per
// image, each under a name of its own, and `gpuscope run` lists them all.
#include <gtest/gtest.h>

#include <algorithm>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

struct ChainRun {
  ProcessResult process;
  std::vector<std::string> traces;  // file names in the output directory, sorted
  std::vector<TraceContents> contents;
};

// `gpuscope run -o OUTPUT -- env x (images-1) true`, OUTPUT relative to a
// fresh directory.
ChainRun run_chain(const TempDir& dir, const std::string& output, int env_images) {
  std::vector<std::string> argv = {gpuscope_exe(), "run", "-o", dir.file(output), "--"};
  for (int i = 0; i < env_images; ++i) argv.push_back("env");
  argv.push_back("true");
  ChainRun r;
  r.process = run(argv, clean_env());
  const std::string where = output.back() == '/' ? dir.file(output) : dir.path();
  for (const auto& path : traces_in(where)) {
    r.traces.push_back(std::filesystem::path(path).filename().string());
    r.contents.push_back(read_trace_file(path));
  }
  return r;
}

// Every image of the one pid has its trace: one per program run, all ending
// in a clean exec or exit, and `gpuscope run` names each of them.
void expect_every_image_traced(const ChainRun& r, int env_images) {
  EXPECT_EQ(r.process.exit_code(), 0) << r.process.err;
  EXPECT_EQ(count_lines_with(r.process.err, "cannot create trace"), 0) << r.process.err;
  ASSERT_EQ(r.traces.size(), static_cast<size_t>(env_images + 1)) << r.process.err;
  int envs = 0, trues = 0;
  for (const TraceContents& t : r.contents) {
    ASSERT_TRUE(t.summary.process.has_value()) << t.error;
    ASSERT_TRUE(t.summary.end.has_value());
    EXPECT_EQ(t.summary.process->pid, r.contents[0].summary.process->pid);
    envs += t.summary.process->exe == "/usr/bin/env" || t.summary.process->exe == "/bin/env";
    trues += t.summary.process->exe.ends_with("/true");
  }
  EXPECT_EQ(envs, env_images);
  EXPECT_EQ(trues, 1);
  EXPECT_EQ(count_lines_with(r.process.err, "gpuscope: trace "), env_images + 1) << r.process.err;
  for (const auto& name : r.traces) EXPECT_EQ(count_lines_with(r.process.err, "/" + name + " (pid "), 1) << name;
}

std::string pid_of(const ChainRun& r) {
  return r.contents.empty() || !r.contents[0].summary.process ? "?"
                                                               : std::to_string(r.contents[0].summary.process->pid);
}

TEST(ExecChains, TheSameProgramTwiceInADirectory) {
  TempDir dir;
  const ChainRun r = run_chain(dir, "out/", 2);
  expect_every_image_traced(r, 2);
  const std::string p = pid_of(r);
  EXPECT_EQ(r.traces, (std::vector<std::string>{"gpuscope-env-" + p + "-exec2.gpuscope",
                                                "gpuscope-env-" + p + ".gpuscope",
                                                "gpuscope-true-" + p + ".gpuscope"}));
}

TEST(ExecChains, AFourDeepChainNumbersItsImages) {
  TempDir dir;
  const ChainRun r = run_chain(dir, "out/", 4);
  expect_every_image_traced(r, 4);
  const std::string p = pid_of(r);
  for (const char* suffix : {"", "-exec2", "-exec3", "-exec4"}) {
    const std::string name = "gpuscope-env-" + p + suffix + ".gpuscope";
    EXPECT_TRUE(std::find(r.traces.begin(), r.traces.end(), name) != r.traces.end()) << name;
  }
}

TEST(ExecChains, AFileNamesEveryImageAfterIt) {
  TempDir dir;
  const ChainRun r = run_chain(dir, "run.gpuscope", 2);
  expect_every_image_traced(r, 2);
  EXPECT_EQ(r.traces, (std::vector<std::string>{"run-exec2.gpuscope", "run-exec3.gpuscope", "run.gpuscope"}));
}

TEST(ExecChains, APatternWithThePid) {
  TempDir dir;
  const ChainRun r = run_chain(dir, "%n-%p.gpuscope", 3);
  expect_every_image_traced(r, 3);
  const std::string p = pid_of(r);
  EXPECT_EQ(r.traces, (std::vector<std::string>{"env-" + p + "-exec2.gpuscope", "env-" + p + "-exec3.gpuscope",
                                                "env-" + p + ".gpuscope", "true-" + p + ".gpuscope"}));
}

}  // namespace
}  // namespace gpuscope::test
