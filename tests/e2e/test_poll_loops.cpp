// Poll loops end to end (docs/interception.md, "Poll loops"): programs that
// wait for the GPU with `while (cudaEventQuery(e) == cudaErrorNotReady)`
// make millions of calls a second. With 4 KiB thread buffers nothing is
// dropped and the trace counts every poll, for the runtime's and the
// driver's queries; a thread still polling when the process ends keeps
// what it polled.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "call_repeats.h"
#include "e2e_support.h"

namespace gpuscope::test {
namespace {

constexpr int kNotReady = 600;

// On a Gen3 x8 link a 16 MiB copy takes milliseconds: the calls around the
// polls (copies, event records) come slowly enough for a 4 KiB buffer even
// when the writer is kept waiting on a busy machine; the polls alone would
// overflow it in microseconds.
std::vector<std::string> slow_link(const std::string& output, const std::string& buffer_kb) {
  return preload_env(output, {"GPUSCOPE_BUFFER_KB=" + buffer_kb,
                              "LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR),
                              "SIMGPU_NODE=" + std::string(GPUSCOPE_SOURCE_DIR) +
                                  "/samples/simgpu/nodes/pcie-gen3-x8.json"});
}

// The program's outermost calls per function, each record counted as the
// calls it stands for.
std::map<std::string, uint64_t> outermost_calls(const TraceContents& t) {
  std::map<std::string, uint64_t> calls;
  for (const auto& c : t.api_calls)
    if (c.depth() == 0) calls[t.summary.name_of(c.function_id())] += reader::calls_in(c);
  return calls;
}

uint64_t not_ready_answers(const TraceContents& t, const std::string& function) {
  const auto it = t.summary.nonzero_results.find({function, kNotReady});
  return it == t.summary.nonzero_results.end() ? 0 : it->second;
}

TEST(PollLoops, BarePollLoopsAreCountedExactlyWithATinyBuffer) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  constexpr uint64_t kThreads = 4, kRounds = 5;
  TempDir dir;
  const ProcessResult r = run({bin("cuda_threads"), "polls:4:5"}, slow_link(dir.path() + "/", "4"));
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m,
                                std::regex(R"(cudaEventQuery (\d+) cudaStreamQuery (\d+) cuEventQuery (\d+) )"
                                           R"(cuStreamQuery (\d+))")))
      << r.out;
  ASSERT_EQ(traces_in(dir.path()).size(), 1u);
  const TraceContents t = read_trace_file(traces_in(dir.path()).front());
  ASSERT_TRUE(t.summary.end.has_value());
  EXPECT_EQ(t.summary.dropped_total(), 0u);
  const auto calls = outermost_calls(t);
  uint64_t polls = 0;
  int i = 1;
  for (const std::string f : {"cudaEventQuery", "cudaStreamQuery", "cuEventQuery", "cuStreamQuery"}) {
    const uint64_t printed = std::stoull(m[i++]);
    EXPECT_GT(printed, 1000u) << f << ": the loop hardly polled; nothing was tested";
    EXPECT_EQ(not_ready_answers(t, f), printed) << f;
    ASSERT_TRUE(calls.contains(f)) << f;
    EXPECT_EQ(calls.at(f), printed + kThreads * kRounds) << f << ": the polls and the answer that ended each loop";
    polls += printed;
  }
  EXPECT_EQ(t.summary.coalesced_polls, polls);
  EXPECT_LT(t.summary.coalesced_records, polls / 1000) << "the polls were not coalesced";
  const ProcessResult info = run({gpuscope_exe(), "info", traces_in(dir.path()).front()});
  EXPECT_NE(info.out.find(fmt::format("polls:       {} \"not ready\" answers of event and stream queries in {} record{}", polls,
                                      t.summary.coalesced_records, t.summary.coalesced_records == 1 ? "" : "s")),
            std::string::npos)
      << info.out;
}

// A thread polling without end while the process ends keeps what it
// recorded, however the process ends (default buffers: what is tested is
// the end, not the buffer).
void expect_polls_kept_at(const std::string& how) {
  TempDir dir;
  const ProcessResult r = run({bin("cuda_threads"), "poll_at_exit:300:" + how}, slow_link(dir.path() + "/", "1024"));
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(not ready so far: (\d+))"))) << r.out;
  const uint64_t printed = std::stoull(m[1]);
  EXPECT_GT(printed, 1000u) << "the loop hardly polled; nothing was tested";
  const auto traces = traces_in(dir.path());
  ASSERT_EQ(traces.size(), how == "exec" ? 2u : 1u);  // the exec'd image writes its own
  const TraceContents t = read_trace_file(traces.front());
  ASSERT_TRUE(t.summary.end.has_value());
  EXPECT_EQ(t.summary.drops[static_cast<size_t>(fb::DropReason::BufferFull)], 0u);
  // Polled on after the count was printed, until the end of capture.
  EXPECT_GE(not_ready_answers(t, "cudaEventQuery"), printed);
}

TEST(PollLoops, AThreadStillPollingKeepsItsPollsAtExit) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  expect_polls_kept_at("exit");
}

TEST(PollLoops, AThreadStillPollingKeepsItsPollsAtImmediateExit) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  expect_polls_kept_at("_exit");
}

TEST(PollLoops, AThreadStillPollingKeepsItsPollsAtExec) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  expect_polls_kept_at("exec");
}

}  // namespace
}  // namespace gpuscope::test
