// CUDA graphs, stream capture and the rest of what real programs call,
// end to end on simgpu: every call is in the trace with the result the
// program saw, work enqueued while a stream captures is recorded as
// captured (not as a kernel, copy or memset that ran), and each graph launch
// says how many kernels, copies and memsets it ran — what the program put
// into that graph. The programs (graph_work.cu, graph_driver.cpp) print
// every call's result and, after each graph launch, what the graph holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e_support.h"
#include "record_flags.h"

namespace gpuscope::test {
namespace {

struct Printed {
  std::multiset<std::pair<std::string, int>> calls;  // "call NAME RESULT"
  std::vector<std::array<uint32_t, 3>> ran;           // "ran K C M", in order
};

Printed parse(const std::string& out) {
  Printed p;
  std::istringstream in(out);
  std::string word;
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    l >> word;
    if (word == "call") {
      std::string name;
      int result = 0;
      l >> name >> result;
      p.calls.insert({name, result});
    } else if (word == "ran") {
      std::array<uint32_t, 3> r{};
      l >> r[0] >> r[1] >> r[2];
      p.ran.push_back(r);
    }
  }
  return p;
}

std::string name_of(const TraceContents& t, uint32_t id) {
  auto it = t.summary.strings.find(id);
  return it == t.summary.strings.end() ? "?" : it->second;
}

// Outermost calls: the program's own (a driver call under a runtime call is not).
std::multiset<std::pair<std::string, int>> outermost_calls(const TraceContents& t) {
  std::multiset<std::pair<std::string, int>> calls;
  for (const auto& c : t.api_calls)
    if (c.depth() == 0) calls.insert({name_of(t, c.function_id()), c.result()});
  return calls;
}

// Each call the program made, with its result, is in the trace.
void expect_every_call_recorded(const Printed& printed, const TraceContents& t) {
  const auto recorded = outermost_calls(t);
  for (const auto& call : printed.calls)
    EXPECT_GE(recorded.count(call), printed.calls.count(call))
        << call.first << " returning " << call.second << " is not in the trace as often as the program made it";
}

// The trace's graph launches, in time order, against what the program ran.
void expect_graph_launches(const Printed& printed, const TraceContents& t) {
  std::vector<fb::GraphLaunch> launches(t.graph_launches.begin(), t.graph_launches.end());
  std::sort(launches.begin(), launches.end(), [](auto& a, auto& b) { return a.start_ns() < b.start_ns(); });
  ASSERT_EQ(launches.size(), printed.ran.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    SCOPED_TRACE("graph launch " + std::to_string(i));
    EXPECT_EQ(launches[i].flags() & container::kGraphContentsUnknown, 0);
    EXPECT_EQ(launches[i].kernels(), printed.ran[i][0]);
    EXPECT_EQ(launches[i].copies(), printed.ran[i][1]);
    EXPECT_EQ(launches[i].memsets(), printed.ran[i][2]);
  }
}

// How many outermost calls of `function` were (or were not) captured.
uint64_t calls_of(const TraceContents& t, const std::string& function, bool captured) {
  return std::count_if(t.api_calls.begin(), t.api_calls.end(), [&](const fb::ApiCall& c) {
    return c.depth() == 0 && name_of(t, c.function_id()) == function &&
           ((c.flags() & container::kCallCaptured) != 0) == captured;
  });
}

struct CallCount {
  std::string function;
  bool captured;
  uint64_t count;
};
void expect_calls(const TraceContents& t, const std::vector<CallCount>& expected) {
  for (const auto& [function, captured, count] : expected)
    EXPECT_EQ(calls_of(t, function, captured), count) << function << (captured ? ", captured" : ", run");
}

class Graphs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu is not built";
    if (!std::filesystem::exists(bin("graph_work"))) GTEST_SKIP() << "samples not built";
  }

  // The program plain and traced: same output and status, and its trace.
  static Traced run_both(const std::vector<std::string>& program, const std::vector<std::string>& env = {}) {
    std::vector<std::string> plain_env = env;
    plain_env.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
    std::vector<std::string> argv = program;
    argv[0] = bin(argv[0]);
    const ProcessResult plain = run(argv, environment_with(plain_env, {"LD_PRELOAD"}));
    Traced traced = run_on_simgpu(program, {}, env);
    EXPECT_EQ(traced.process.exit_code(), plain.exit_code()) << traced.process.err;
    EXPECT_EQ(traced.process.out, plain.out);
    EXPECT_TRUE(traced.trace.opened) << traced.trace.error;
    return traced;
  }

  // The program under `gpuscope run -o DIR/t.gpuscope`: the trace's path
  // (the program's stdout in last_output_).
  std::string traced_to(const TempDir& dir, const std::vector<std::string>& program) {
    const std::string trace = dir.path() + "/t.gpuscope";
    std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", trace, "--", bin(program.front())};
    argv.insert(argv.end(), program.begin() + 1, program.end());
    const ProcessResult r = run(argv, environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)}));
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    last_output_ = r.out;
    return trace;
  }
  std::string last_output_;
};

TEST_F(Graphs, CapturedWorkDoesNotRunAndEachGraphLaunchCountsWhatItRan) {
  const Traced t = run_both({"graph_work", "capture", "3"});
  const Printed printed = parse(t.process.out);
  ASSERT_EQ(printed.ran.size(), 3u) << t.process.out;
  expect_every_call_recorded(printed, t.trace);
  expect_graph_launches(printed, t.trace);
  // One kernel ran when launched; the three launched during the capture ran
  // only inside the graph, as did the capture's memset and copy.
  expect_calls(t.trace, {{"__cudaLaunchKernel", false, 1},
                         {"__cudaLaunchKernel", true, 3},
                         {"cudaMemsetAsync", true, 1},
                         {"cudaMemcpyAsync", true, 1}});
  EXPECT_EQ(t.trace.kernels.size(), 1u);
  EXPECT_TRUE(t.trace.copies.empty());
  EXPECT_TRUE(t.trace.memsets.empty());
  EXPECT_EQ(t.trace.summary.captured_calls, 5u);
}

// What a graph runs is kept from its instantiation on, recording or not: a
// capture window that opens later still counts the launches' kernels.
TEST_F(Graphs, LaunchesInACaptureWindowCountAGraphInstantiatedBeforeIt) {
  const Traced t = run_on_simgpu({"graph_work", "window", "3"}, {"--capture-range", "cudaProfilerApi"});
  ASSERT_EQ(t.process.exit_code(), 0) << t.process.err;
  const Printed printed = parse(t.process.out);
  ASSERT_EQ(printed.ran.size(), 3u) << t.process.out;
  expect_graph_launches(printed, t.trace);
  EXPECT_EQ(calls_of(t.trace, "cudaGraphInstantiate", false), 0u);  // outside the window
}

TEST_F(Graphs, ExplicitGraphsExecUpdatesAndNewExecsCountWhatEachLaunchRan) {
  const Traced t = run_both({"graph_work", "build", "2"});
  const Printed printed = parse(t.process.out);
  ASSERT_EQ(printed.ran.size(), 6u) << t.process.out;  // both updates' outcomes included
  expect_every_call_recorded(printed, t.trace);
  expect_graph_launches(printed, t.trace);
  EXPECT_TRUE(t.trace.kernels.empty());  // no kernel was launched on its own
}

// What a failing graph call returns is evidence: the trace holds it, and
// `gpuscope info` lists it by name and code.
TEST_F(Graphs, FailingGraphCallsShowTheirErrorInTheTrace) {
  TempDir dir;
  const std::string trace = traced_to(dir, {"graph_work", "errors"});
  const Printed printed = parse(last_output_);
  ASSERT_EQ(printed.calls.size(), 3u) << last_output_;
  for (const auto& [name, result] : printed.calls) EXPECT_NE(result, 0) << name << " was meant to fail";
  expect_every_call_recorded(printed, read_trace_file(trace));
  const ProcessResult info = run({gpuscope_exe(), "info", trace}, clean_env());
  for (const auto& [name, result] : printed.calls)
    EXPECT_NE(info.out.find(name + " returned " + std::to_string(result)), std::string::npos) << info.out;
}

// Callbacks, host functions, occupancy, peer access (on simgpu's
// two-device node), pools, advice and prefetches: each call with its
// result; prefetches also as copies of managed memory toward their target.
TEST_F(Graphs, TheOtherCallsRealProgramsMakeAreInTheTraceWithTheirResults) {
  const std::string node = std::string(GPUSCOPE_SOURCE_DIR) + "/samples/simgpu/nodes/two-devices.json";
  const Traced t = run_both({"graph_work", "apis"}, {"SIMGPU_NODE=" + node});
  const Printed printed = parse(t.process.out);
  EXPECT_EQ(printed.calls.count({"cudaDeviceEnablePeerAccess", 0}), 1u) << t.process.out;
  expect_every_call_recorded(printed, t.trace);
  std::vector<fb::Copy> prefetches;
  for (const auto& c : t.trace.copies)
    if ((c.flags() & container::kCopyPrefetch) != 0) prefetches.push_back(c);
  ASSERT_EQ(prefetches.size(), printed.calls.count({"cudaMemPrefetchAsync", 0}));
  ASSERT_EQ(prefetches.size(), 2u);
  EXPECT_EQ(prefetches[0].direction(), fb::CopyDirection::HostToDevice);
  EXPECT_EQ(prefetches[0].bytes(), 4u << 20);
  EXPECT_EQ(prefetches[1].direction(), fb::CopyDirection::DeviceToHost);
  EXPECT_EQ(prefetches[1].bytes(), 2u << 20);
  for (const auto& p : prefetches) {
    EXPECT_EQ(p.src_kind(), fb::MemoryKind::Managed);
    EXPECT_NE(p.flags() & container::kCopyAsync, 0);
  }
}

// A driver-API program (JIT-loaded module, capture through
// cuStreamBeginCapture_v2, cuGraphLaunch): the same accounting.
TEST_F(Graphs, DriverApiCaptureAndGraphLaunchesAreCountedTheSameWay) {
  const Traced t = run_both({"graph_driver", "3"});
  const Printed printed = parse(t.process.out);
  ASSERT_EQ(printed.ran.size(), 3u) << t.process.out;
  expect_graph_launches(printed, t.trace);
  expect_calls(t.trace, {{"cuLaunchKernel", false, 1},
                         {"cuLaunchKernel", true, 2},
                         {"cuMemsetD8Async", true, 1},
                         {"cuStreamBeginCapture_v2", false, 1},
                         {"cuGraphInstantiateWithFlags", false, 1}});
  EXPECT_EQ(t.trace.kernels.size(), 1u);
  EXPECT_TRUE(t.trace.memsets.empty());
}

// The analysis counts the kernels graph launches ran with the ones launched
// one by one, and says how many calls a capture took.
TEST_F(Graphs, AnalyzeCountsTheKernelsGraphLaunchesRan) {
  TempDir dir;
  const std::string trace = traced_to(dir, {"graph_work", "capture", "4"});
  const ProcessResult r = run({gpuscope_exe(), "analyze", "--json", trace}, clean_env());
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const auto metrics = nlohmann::json::parse(r.out)["metrics"];
  EXPECT_EQ(metrics["graph_launches"], 4);
  EXPECT_EQ(metrics["graph_kernels"], 4 * 3);
  EXPECT_EQ(metrics["kernels"], 1 + 4 * 3);
  EXPECT_EQ(metrics["captured_calls"], 5);
  // The verdict's "seen" line counts the graphs' copies with their kernels.
  const ProcessResult text = run({gpuscope_exe(), "analyze", trace}, clean_env());
  EXPECT_NE(text.out.find("seen 13 kernel(s), 4 copies"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace gpuscope::test
