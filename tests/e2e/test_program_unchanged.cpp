// The traced program is sacred: same stdout, stderr and exit status with and
// without gpuscope, on every way a process can end, with threads and forks;
// and each way of ending is recorded in the trace as it happened.
#include <gtest/gtest.h>
#include <signal.h>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

struct Scenario {
  const char* name;
  std::vector<std::string> args;
  fb::EndKind end;      // what the trace must say
  bool has_end_record;  // false: the process died without running any code
  // How it began to end, when a later step changed the status; its status.
  fb::EndKind began = fb::EndKind::Unknown;
  int began_status = 0;
};

// Test names and ctest output show the scenario's name, not its bytes.
void PrintTo(const Scenario& s, std::ostream* os) { *os << s.name; }

class ProgramUnchanged : public ::testing::TestWithParam<Scenario> {};

TEST_P(ProgramUnchanged, SameOutputAndStatusAndAnHonestTrace) {
  const Scenario& s = GetParam();
  std::vector<std::string> argv = {bin("behave")};
  argv.insert(argv.end(), s.args.begin(), s.args.end());
  // Bounded: a process gpuscope kept alive fails the test instead of hanging it.
  constexpr auto kLimit = std::chrono::seconds(30);
  const ProcessResult plain = finish_within(spawn(argv, clean_env()), kLimit);

  TempDir dir;
  const ProcessResult traced = finish_within(spawn(argv, preload_env(dir.path() + "/")), kLimit);
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(traced.err, plain.err);
  EXPECT_EQ(traced.status, plain.status);

  // The trace of the process this test started (an exec'd child has its own).
  TraceContents t;
  for (const auto& path : traces_in(dir.path())) {
    TraceContents candidate = read_trace_file(path);
    if (candidate.summary.process && candidate.summary.process->ppid == getpid()) t = std::move(candidate);
  }
  ASSERT_TRUE(t.summary.process.has_value()) << "no trace of the started process";
  EXPECT_FALSE(t.summary.stats.frames_corrupt);
  ASSERT_EQ(t.summary.end.has_value(), s.has_end_record) << s.name;
  if (s.has_end_record) {
    EXPECT_EQ(t.summary.end->kind, s.end) << reader::end_text(*t.summary.end);
    EXPECT_EQ(t.summary.end->exit_status, plain.exit_code());
    EXPECT_EQ(t.summary.end->began_kind, s.began) << reader::end_text(*t.summary.end);
    if (s.began != fb::EndKind::Unknown) {
      EXPECT_EQ(t.summary.end->began_status, s.began_status);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryExitPath, ProgramUnchanged,
    ::testing::Values(
        Scenario{"return", {"out:hello", "err:warning", "return:3"}, fb::EndKind::ReturnFromMain, true},
        Scenario{"exit", {"out:hello", "spin:50", "exit:42"}, fb::EndKind::Exit, true},
        Scenario{"immediate_exit", {"out:partial", "_exit:7"}, fb::EndKind::ImmediateExit, true},
        Scenario{"exit_from_thread", {"out:x", "thread_exit:9"}, fb::EndKind::Exit, true},
        // After main returned 0, an atexit handler ends the process with 8.
        Scenario{"exit_from_atexit_handler", {"atexit_exit:8", "return:0"}, fb::EndKind::Exit, true,
                 fb::EndKind::ReturnFromMain, 0},
        Scenario{"immediate_exit_from_atexit_handler", {"atexit__exit:8", "return:0"}, fb::EndKind::ImmediateExit,
                 true, fb::EndKind::ReturnFromMain, 0},
        Scenario{"exit_from_atexit_handler_after_exit", {"atexit_exit:8", "exit:2"}, fb::EndKind::Exit, true,
                 fb::EndKind::Exit, 2},
        Scenario{"atexit_handler_returns", {"atexit_returns", "return:5"}, fb::EndKind::ReturnFromMain, true},
        Scenario{"main_thread_leaves", {"main_leaves:100"}, fb::EndKind::LastThreadExit, true},
        Scenario{"abort", {"out:before abort", "abort"}, fb::EndKind::Unknown, false},
        Scenario{"sigterm", {"out:before", "signal:15"}, fb::EndKind::Unknown, false},
        Scenario{"threads64", {"threads:64", "return:0"}, fb::EndKind::ReturnFromMain, true},
        Scenario{"fork_without_exec", {"fork:5", "out:parent done", "return:0"}, fb::EndKind::ReturnFromMain, true},
        Scenario{"vfork_exec", {"vfork_exec:4", "return:1"}, fb::EndKind::ReturnFromMain, true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ProgramUnchanged, SixtyFourThreadsAreAllSeen) {
  TempDir dir;
  const ProcessResult r = run({bin("behave"), "threads:64"}, preload_env(dir.path() + "/"));
  ASSERT_EQ(r.exit_code(), 0);
  const TraceContents t = read_trace_file(traces_in(dir.path()).front());
  std::set<uint32_t> tids;
  for (const auto& s : t.cpu_samples)
    if (s.tid() != 0) tids.insert(s.tid());
  EXPECT_GE(tids.size(), 65u);  // main + 64 workers (+ the writer)
}

TEST(ProgramUnchanged, ForkChildWritesNothingAndLeavesTheParentTraceWhole) {
  TempDir dir;
  const ProcessResult r = run({bin("behave"), "fork:5", "spin:100", "return:0"}, preload_env(dir.path() + "/"));
  EXPECT_EQ(r.out, "fork-child\nchild exited 5\n");
  const auto traces = traces_in(dir.path());
  ASSERT_EQ(traces.size(), 1u);  // the fork child is not traced (docs/trace-format.md)
  const TraceContents t = read_trace_file(traces.front());
  ASSERT_TRUE(t.summary.end.has_value());
  EXPECT_EQ(t.summary.end->kind, fb::EndKind::ReturnFromMain);
  EXPECT_TRUE(t.summary.problems.empty()) << t.summary.problems.front().message;
}

TEST(ProgramUnchanged, ExecedChildGetsItsOwnTrace) {
  TempDir dir;
  const ProcessResult r = run({gpuscope_exe(), "run", "-q", "-o", dir.path(), "--", bin("behave"),
                               "fork_exec:6", "return:0"});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(r.out, "exec-child\nchild exited 6\n");
  const auto traces = traces_in(dir.path());
  ASSERT_EQ(traces.size(), 2u);
  const TraceContents a = read_trace_file(traces[0]);
  const TraceContents b = read_trace_file(traces[1]);
  ASSERT_TRUE(a.summary.process && b.summary.process);
  EXPECT_EQ(a.summary.process->run_id, b.summary.process->run_id);
  const bool a_is_parent = b.summary.process->ppid == a.summary.process->pid;
  const bool b_is_parent = a.summary.process->ppid == b.summary.process->pid;
  EXPECT_TRUE(a_is_parent || b_is_parent);
  const TraceContents& child = a_is_parent ? b : a;
  ASSERT_TRUE(child.summary.end.has_value());
  EXPECT_EQ(child.summary.end->exit_status, 6);
}

TEST(ProgramUnchanged, SigkillLeavesATraceReadableUpToTheLastFlush) {
  TempDir dir;
  Spawned p = spawn({bin("behave"), "spin:10000"}, preload_env(dir.path() + "/"));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  kill(p.pid, SIGKILL);
  const ProcessResult r = finish(p);
  ASSERT_EQ(r.signal(), SIGKILL);
  const TraceContents t = read_trace_file(traces_in(dir.path()).front());
  ASSERT_TRUE(t.summary.process.has_value());
  EXPECT_FALSE(t.summary.end.has_value());
  EXPECT_EQ(t.summary.stats.frames_corrupt, 0u);
  EXPECT_GE(t.summary.stats.frames_read, 3u);  // flushed every 100 ms while it ran
  uint64_t last_sample = 0;
  for (const auto& s : t.cpu_samples) last_sample = std::max<uint64_t>(last_sample, s.start_ns());
  EXPECT_GE(last_sample, t.summary.process->start_monotonic_ns + 200'000'000u);
}

}  // namespace
}  // namespace gpuscope::test
