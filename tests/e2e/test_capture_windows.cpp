// Capture windows end to end on simgpu (issue 7): a profiler-API capture
// range records exactly the calls between cudaProfilerStart and
// cudaProfilerStop, once ("stop": the trace is finalized and the program
// runs on) or every time ("repeat", "repeat:N"); --delay/--duration record
// only their stretch of time. The program's output and status never change.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "capture_range.h"
#include "environment.h"
#include "settings.h"
#include "e2e_support.h"

namespace gpuscope::test {
namespace {

constexpr int kRounds = 3, kLoads = 3, kKernels = 5, kClears = 4;

std::vector<std::string> phases() {
  return {"profiled_phases", "--rounds", std::to_string(kRounds), "--loads", std::to_string(kLoads), "--kernels",
          std::to_string(kKernels), "--clears", std::to_string(kClears)};
}

// The capture windows: the union of the CaptureWindow markers (a long
// window is also written provisionally, once a second, while open).
std::vector<fb::Marker> windows_of(const TraceContents& t) {
  std::vector<fb::Marker> all;
  for (const auto& m : t.markers)
    if (m.kind() == fb::MarkerKind::CaptureWindow) all.push_back(m);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.start_ns() < b.start_ns(); });
  std::vector<fb::Marker> out;
  for (const auto& m : all) {
    if (!out.empty() && m.start_ns() <= out.back().start_ns() + out.back().duration_ns()) {
      const uint64_t end = std::max(out.back().start_ns() + out.back().duration_ns(), m.start_ns() + m.duration_ns());
      out.back() = fb::Marker(out.back().start_ns(), end - out.back().start_ns(), 0, 0, 0, 0,
                              fb::MarkerKind::CaptureWindow, 0, 0);
    } else {
      out.push_back(m);
    }
  }
  return out;
}

uint64_t outermost_calls(const TraceContents& t, const std::string& name) {
  uint64_t n = 0;
  for (const auto& c : t.api_calls) n += c.depth() == 0 && t.summary.name_of(c.function_id()) == name;
  return n;
}

class CaptureWindows : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
    std::vector<std::string> argv = phases();
    argv[0] = bin(argv[0]);
    plain_ = run(argv, environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)}));
  }
  // What every windowed run must keep: the program's own behaviour.
  void expect_program_unchanged(const Traced& r) {
    EXPECT_EQ(r.process.exit_code(), 0) << r.process.err;
    EXPECT_EQ(r.process.out, plain_.out);
    EXPECT_EQ(r.process.err.find("gpuscope"), std::string::npos) << r.process.err;
  }
  // Only the profiled steps: kernels, one D2H copy and one sync per window;
  // none of the loads (H2D) or clears (memsets) around them.
  void expect_only_profiled_steps(const TraceContents& t, int windows) {
    EXPECT_EQ(t.kernels.size(), static_cast<size_t>(windows * kKernels));
    EXPECT_EQ(t.memsets.size(), 0u);
    EXPECT_EQ(outermost_calls(t, "cudaMemcpy"), static_cast<uint64_t>(windows));
    for (const auto& c : t.copies) EXPECT_EQ(c.direction(), fb::CopyDirection::DeviceToHost);
    EXPECT_EQ(outermost_calls(t, "cudaDeviceSynchronize"), static_cast<uint64_t>(windows));
    EXPECT_EQ(outermost_calls(t, "cudaProfilerStart"), static_cast<uint64_t>(windows));
    EXPECT_EQ(outermost_calls(t, "cudaProfilerStop"), static_cast<uint64_t>(windows));
    EXPECT_EQ(t.summary.dropped_total(), 0u);
    // Every call began inside a window.
    const auto w = windows_of(t);
    ASSERT_EQ(w.size(), static_cast<size_t>(windows));
    for (const auto& c : t.api_calls) {
      const bool inside = std::any_of(w.begin(), w.end(), [&](const fb::Marker& m) { return began_inside(c, m); });
      EXPECT_TRUE(inside) << t.summary.name_of(c.function_id()) << " outside every window";
    }
  }
  // Window bounds are CLOCK_MONOTONIC readings; call times come through the
  // TSC conversion, which agrees with it to within microseconds.
  static bool began_inside(const fb::ApiCall& c, const fb::Marker& m) {
    constexpr uint64_t kClockSlack = 50'000;
    return c.start_ns() + kClockSlack >= m.start_ns() && c.start_ns() <= m.start_ns() + m.duration_ns() + kClockSlack;
  }
  ProcessResult plain_;
};

TEST_F(CaptureWindows, ProfilerRangeStopRecordsTheFirstRangeThenDetaches) {
  const Traced r = run_on_simgpu(phases(), {"--capture-range", "cudaProfilerApi"});
  expect_program_unchanged(r);
  ASSERT_TRUE(r.trace.opened) << r.trace.error;
  expect_only_profiled_steps(r.trace, 1);
  ASSERT_TRUE(r.trace.summary.end.has_value());
  EXPECT_EQ(r.trace.summary.end->kind, fb::EndKind::Detached);
}

TEST_F(CaptureWindows, ProfilerRangeRepeatRecordsEveryRange) {
  const Traced r = run_on_simgpu(phases(), {"--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat"});
  expect_program_unchanged(r);
  expect_only_profiled_steps(r.trace, kRounds);
  ASSERT_TRUE(r.trace.summary.end.has_value());
  EXPECT_EQ(r.trace.summary.end->kind, fb::EndKind::ReturnFromMain);
}

TEST_F(CaptureWindows, ProfilerRangeRepeatNStopsAfterN) {
  const Traced r =
      run_on_simgpu(phases(), {"--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat:2"});
  expect_program_unchanged(r);
  expect_only_profiled_steps(r.trace, 2);
  EXPECT_EQ(r.trace.summary.end->kind, fb::EndKind::Detached);
}

TEST_F(CaptureWindows, DelayAndDurationRecordOnlyTheirStretch) {
  // ~1.3 s of back-to-back synchronized steps on simgpu's default node.
  const Traced r = run_on_simgpu({"sync_bound", "--iters", "100000"}, {"--delay", "0.3", "--duration", "0.4"});
  EXPECT_EQ(r.process.exit_code(), 0) << r.process.err;
  ASSERT_TRUE(r.trace.opened) << r.trace.error;
  const auto w = windows_of(r.trace);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_GE(w[0].duration_ns(), 400'000'000u);
  EXPECT_LT(w[0].duration_ns(), 500'000'000u);  // closed at the writer's next poll
  ASSERT_TRUE(r.trace.summary.process.has_value());
  const uint64_t started = r.trace.summary.process->start_monotonic_ns;
  EXPECT_GE(w[0].start_ns(), started + 300'000'000);
  EXPECT_FALSE(r.trace.kernels.empty());
  EXPECT_LT(r.trace.kernels.size(), 100000u);  // not the whole run
  for (const auto& c : r.trace.api_calls)
    EXPECT_TRUE(began_inside(c, w[0])) << r.trace.summary.name_of(c.function_id()) << " began "
                                       << static_cast<int64_t>(c.start_ns() - w[0].start_ns()) << " ns into the "
                                       << w[0].duration_ns() << " ns window";
  EXPECT_EQ(r.trace.summary.end->kind, fb::EndKind::Detached);
  EXPECT_EQ(r.trace.summary.dropped_total(), 0u);
}

TEST_F(CaptureWindows, TheAnalysisCoversOnlyTheWindows) {
  TempDir dir;
  const std::string trace = dir.path() + "/w.gpuscope";
  std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", trace, "--capture-range", "cudaProfilerApi",
                                   "--capture-range-end", "repeat", "--"};
  std::vector<std::string> program = phases();
  program[0] = bin(program[0]);
  argv.insert(argv.end(), program.begin(), program.end());
  const auto r = run(argv, environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)}));
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const TraceContents t = read_trace_file(trace);
  uint64_t captured = 0;
  for (const auto& w : windows_of(t)) captured += w.duration_ns();
  const auto analysis = run({gpuscope_exe(), "analyze", "--json", trace}, clean_env());
  ASSERT_EQ(analysis.exit_code(), 0) << analysis.err;
  const auto json = nlohmann::json::parse(analysis.out);
  EXPECT_NEAR(json["breakdown"]["wall_s"].get<double>(), captured / 1e9, 1e-6);  // the windows, not the run
  bool named = false;
  for (const auto& line : json["coverage"]) named |= line.get<std::string>().starts_with("capture windows: 3 ");
  EXPECT_TRUE(named) << analysis.out;
  const auto text = run({gpuscope_exe(), "analyze", trace}, clean_env());
  EXPECT_NE(text.out.find("scope: 3 capture window(s)"), std::string::npos) << text.out;
}

TEST_F(CaptureWindows, BadWindowOptionsAreRefusedWithOneLine) {
  const auto r = run({gpuscope_exe(), "run", "--capture-range-end", "repeat:0", "--", bin("profiled_phases")},
                     clean_env());
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.err.find("repeat:N"), std::string::npos) << r.err;
  const auto range = run({gpuscope_exe(), "run", "--capture-range", "nvtx", "--", bin("profiled_phases")}, clean_env());
  EXPECT_EQ(range.exit_code(), 2);
}


// NVTX capture ranges (--capture-range nvtx:MESSAGE[@DOMAIN]) on the
// nvtx_phases sample: train steps are push/pop ranges in the default
// domain, the checkpoint a registered-string range in the "io" domain,
// "prefetch" a start/end range ended by another thread, and "évaluation" a
// wide-character push.
constexpr int kSteps = 3, kKernelsPerStep = 64, kCheckpointRounds = 20;

class NvtxCaptureRange : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  }
  static Traced capture(const std::string& range, const std::string& end = "stop") {
    const Traced r = run_on_simgpu({"nvtx_phases", "--steps", std::to_string(kSteps), "--copies", "4", "--rounds",
                                    std::to_string(kCheckpointRounds)},
                                   {"--capture-range", range, "--capture-range-end", end});
    EXPECT_EQ(r.process.exit_code(), 0) << r.process.err;
    EXPECT_TRUE(r.process.out.starts_with("nvtx_phases: load 4 copies, 3 train steps")) << r.process.out;
    EXPECT_EQ(r.process.err.find("gpuscope"), std::string::npos) << r.process.err;
    EXPECT_TRUE(r.trace.opened) << r.trace.error;
    return r;
  }
  // Every call and NVTX marker began inside a window (thread names are the
  // writer's metadata, written whenever it learns them).
  static void expect_all_inside(const TraceContents& t) {
    const auto w = windows_of(t);
    const auto inside = [&](uint64_t ns) {
      return std::any_of(w.begin(), w.end(), [&](const fb::Marker& m) {
        return ns + 50'000 >= m.start_ns() && ns <= m.start_ns() + m.duration_ns() + 50'000;
      });
    };
    for (const auto& c : t.api_calls) EXPECT_TRUE(inside(c.start_ns())) << t.summary.name_of(c.function_id());
    using K = fb::MarkerKind;
    for (const auto& m : t.markers) {
      if (m.kind() == K::CaptureWindow || m.kind() == K::CaptureArmed || m.kind() == K::ThreadName) continue;
      EXPECT_TRUE(inside(m.start_ns())) << "marker " << static_cast<int>(m.kind()) << " outside every window";
    }
  }
  static std::map<std::string, int> pushes(const TraceContents& t) {
    std::map<std::string, int> out;
    for (const auto& m : t.markers)
      if (m.kind() == fb::MarkerKind::RangePush) ++out[t.summary.name_of(m.name_id())];
    return out;
  }
};

TEST_F(NvtxCaptureRange, EveryTrainStepIsOneWindowHoldingExactlyItsWork) {
  const Traced r = capture("nvtx:train_step", "repeat");
  const TraceContents& t = r.trace;
  ASSERT_EQ(windows_of(t).size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(t.kernels.size(), static_cast<size_t>(kSteps * kKernelsPerStep));
  EXPECT_EQ(outermost_calls(t, "cudaDeviceSynchronize"), static_cast<uint64_t>(kSteps));
  EXPECT_TRUE(t.copies.empty());  // the loads and the checkpoint's copy are outside
  EXPECT_TRUE(t.memsets.empty());
  EXPECT_EQ(pushes(t), (std::map<std::string, int>{{"train_step", kSteps}, {"forward", kSteps}}));
  expect_all_inside(t);
  EXPECT_EQ(t.summary.end->kind, fb::EndKind::ReturnFromMain);
  EXPECT_EQ(t.summary.dropped_total(), 0u);
}

TEST_F(NvtxCaptureRange, StopEndsTheTraceAfterTheFirstRange) {
  const Traced r = capture("nvtx:train_step");
  ASSERT_EQ(windows_of(r.trace).size(), 1u);
  EXPECT_EQ(r.trace.kernels.size(), static_cast<size_t>(kKernelsPerStep));
  EXPECT_EQ(pushes(r.trace), (std::map<std::string, int>{{"train_step", 1}, {"forward", 1}}));
  expect_all_inside(r.trace);
  EXPECT_EQ(r.trace.summary.end->kind, fb::EndKind::Detached);
}

TEST_F(NvtxCaptureRange, DomainRangeWithRegisteredMessage) {
  const Traced r = capture("nvtx:checkpoint@io");
  const TraceContents& t = r.trace;
  ASSERT_EQ(windows_of(t).size(), 1u);
  EXPECT_EQ(t.kernels.size(), static_cast<size_t>(kCheckpointRounds));
  EXPECT_EQ(outermost_calls(t, "cudaDeviceSynchronize"), static_cast<uint64_t>(kCheckpointRounds));
  ASSERT_EQ(t.copies.size(), 1u);
  EXPECT_EQ(t.copies[0].direction(), fb::CopyDirection::DeviceToHost);
  expect_all_inside(t);
}

TEST_F(NvtxCaptureRange, StartEndRangeEndedOnAnotherThread) {
  const Traced r = capture("nvtx:prefetch");
  const TraceContents& t = r.trace;
  ASSERT_EQ(windows_of(t).size(), 1u);
  int starts = 0, ends = 0;
  for (const auto& m : t.markers) {
    starts += m.kind() == fb::MarkerKind::RangeStart;
    ends += m.kind() == fb::MarkerKind::RangeEnd;
  }
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(ends, 1);
  EXPECT_TRUE(t.api_calls.empty());  // nothing CUDA happens while prefetching
  expect_all_inside(t);
  EXPECT_EQ(t.summary.end->kind, fb::EndKind::Detached);
}

TEST_F(NvtxCaptureRange, WideCharacterMessage) {
  const Traced r = capture("nvtx:\u00e9valuation");
  ASSERT_EQ(windows_of(r.trace).size(), 1u);
  bool mark = false;
  for (const auto& m : r.trace.markers)
    mark |= m.kind() == fb::MarkerKind::Instant && r.trace.summary.name_of(m.name_id()) == "checkpoint \u2713";
  EXPECT_TRUE(mark);
  EXPECT_TRUE(r.trace.kernels.empty());
}

TEST_F(NvtxCaptureRange, ARangeThatNeverOpensSaysNothingWasCaptured) {
  TempDir dir;
  const std::string trace = dir.file("never.gpuscope");
  // "checkpoint" exists only in the io domain, not the default one.
  const auto r = run({gpuscope_exe(), "run", "-o", trace, "--capture-range", "nvtx:checkpoint", "--",
                      bin("nvtx_phases"), "--steps", "1", "--copies", "1", "--rounds", "2"},
                     environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)}));
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.err.find("nothing captured: no capture window opened (waiting for nvtx:checkpoint)"),
            std::string::npos)
      << r.err;
  const TraceContents t = read_trace_file(trace);
  EXPECT_TRUE(windows_of(t).empty());
  EXPECT_TRUE(t.api_calls.empty());
  const auto analysis = run({gpuscope_exe(), "analyze", "--json", trace}, clean_env());
  ASSERT_EQ(analysis.exit_code(), 0) << analysis.err;
  const auto json = nlohmann::json::parse(analysis.out);
  EXPECT_EQ(json["verdict"]["class"], "inconclusive");
  EXPECT_TRUE(json["findings"].empty()) << json["findings"].dump();  // no CPU-fallback claim from an idle wait
}

TEST_F(NvtxCaptureRange, MalformedNvtxRangeIsRefused) {
  for (const std::string bad : {"nvtx:", "nvtx:@io", "nvtx"}) {
    const auto r = run({gpuscope_exe(), "run", "--capture-range", bad, "--", bin("nvtx_phases")}, clean_env());
    EXPECT_EQ(r.exit_code(), 2) << bad;
    EXPECT_NE(r.err.find("nvtx:MESSAGE"), std::string::npos) << r.err;
  }
}

// `gpuscope run` takes exactly the capture ranges and end policies the
// library reads (protocol/capture_range.h): a value the CLI passes is never
// one the library ignores, nor the reverse. A taken value gets as far as
// starting the (missing) program: 127; a refused one is a usage error: 2.
TEST(CaptureRangeGrammar, TheCliTakesWhatTheLibraryReads) {
  const std::string missing = "/nonexistent/gpuscope-no-such-program";
  const auto exit_code = [&](const char* option, const std::string& value) {
    std::vector<std::string> args = {gpuscope_exe(), "run", "-q", option, value, "--", missing};
    // An end policy needs a range to end (without one it is a usage error).
    if (option == std::string("--capture-range-end")) args.insert(args.begin() + 3, {"--capture-range", "cudaProfilerApi"});
    return run(args, clean_env()).exit_code();
  };
  for (const std::string value : {"cudaProfilerApi", "nvtx:step", "nvtx:step@train", "nvtx:a@b@c", "nvtx:@a@b",
                                  "nvtx:a@", "nvtx:", "nvtx:@io", "nvtx", "cudaprofilerapi", "nvtx:step "})
    EXPECT_EQ(exit_code("--capture-range", value), protocol::is_capture_range(value) ? 127 : 2) << value;
  for (const std::string value : {"stop", "repeat", "repeat:1", "repeat:12", "repeat:0", "repeat:00", "repeat:",
                                  "repeat:99999999999", "repeat:-1", "repeat:x", "Stop"})
    EXPECT_EQ(exit_code("--capture-range-end", value), protocol::is_range_end(value) ? 127 : 2) << value;
}

// The numeric options take what the library takes (protocol/settings.h):
// each bound, and nothing past it.
TEST(CaptureRangeGrammar, TheCliBoundsAreTheLibrarys) {
  const std::string missing = "/nonexistent/gpuscope-no-such-program";
  const auto exit_code = [&](const char* option, const std::string& value) {
    std::vector<std::string> args = {gpuscope_exe(), "run", "-q", option, value, "--", missing};
    // An end policy needs a range to end (without one it is a usage error).
    if (option == std::string("--capture-range-end")) args.insert(args.begin() + 3, {"--capture-range", "cudaProfilerApi"});
    return run(args, clean_env()).exit_code();
  };
  const std::map<std::string, const char*> options = {
      {"--stack-depth", protocol::env::kStackDepth},
      {"--cpu-sample-ms", protocol::env::kCpuSampleMs},
      {"--nvml-hz", protocol::env::kNvmlHz}};
  for (const auto& [option, variable] : options) {
    const protocol::Setting& s = *protocol::find_setting(variable);
    EXPECT_EQ(exit_code(option.c_str(), std::to_string(s.min)), 127) << option;
    EXPECT_EQ(exit_code(option.c_str(), std::to_string(s.max)), 127) << option;
    EXPECT_EQ(exit_code(option.c_str(), std::to_string(s.min - 1)), 2) << option;
    EXPECT_EQ(exit_code(option.c_str(), std::to_string(s.max + 1)), 2) << option;
  }
  const std::string longest_s = std::to_string(protocol::kMaxWindowMs / 1000);  // a year
  for (const char* option : {"--delay", "--duration"}) {
    EXPECT_EQ(exit_code(option, longest_s), 127) << option;
    EXPECT_EQ(exit_code(option, longest_s + "1"), 2) << option;
  }
}

}  // namespace
}  // namespace gpuscope::test
