// NVTX end to end, no GPU needed: the nvtx_phases sample runs on simgpu
// under `gpuscope run`, which makes libgpuscope.so its NVTX injection; the
// trace must hold exactly the ranges, marks, domains and thread name the
// program made, and `gpuscope analyze --range` must narrow the report to
// one phase. Also: the injection entry point is idempotent, and the sample
// behaves the same without gpuscope.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

using nlohmann::json;
using K = fb::MarkerKind;

bool samples_built() {
  return std::filesystem::exists(bin("nvtx_phases")) &&
         std::filesystem::exists(std::string(GPUSCOPE_SIMGPU_LIB_DIR) + "/libcudart.so.13");
}
const std::vector<std::string> kSampleArgs = {"--steps", "3", "--copies", "4", "--rounds", "20"};

std::vector<std::string> sample_env() {
  return environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)},
                          {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "GPUSCOPE_RUN_ID", "GPUSCOPE_ROOT_PID", "SIMGPU_NODE",
                           "NVTX_INJECTION64_PATH", "CUDA_VISIBLE_DEVICES"});
}

class Nvtx : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!samples_built()) GTEST_SKIP() << "nvtx_phases or simgpu is not built";
  }

  // The sample's trace, made once for all tests of this suite.
  static const std::string& trace() {
    static TempDir dir;
    static std::string path;
    if (path.empty()) {
      path = dir.file("nvtx_phases.gpuscope");
      std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", path, "--", bin("nvtx_phases")};
      argv.insert(argv.end(), kSampleArgs.begin(), kSampleArgs.end());
      const ProcessResult r = run(argv, sample_env());
      EXPECT_EQ(r.exit_code(), 0) << r.err;
    }
    return path;
  }

  static json analyze(const std::vector<std::string>& extra, int expected_status = 0) {
    std::vector<std::string> argv = {gpuscope_exe(), "analyze", "--json", trace()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const ProcessResult r = run(argv);
    EXPECT_EQ(r.exit_code(), expected_status) << r.err;
    return json::parse(r.out, nullptr, false);
  }
};

// "name" or "name@domain" for one marker, with the trace's strings.
std::string label(const TraceContents& t, const fb::Marker& m) {
  const std::string name = m.name_id() ? t.summary.name_of(m.name_id()) : "";
  return m.domain_id() ? name + "@" + t.summary.name_of(m.domain_id()) : name;
}

TEST_F(Nvtx, TraceHoldsExactlyTheProgramsRangesMarksDomainsAndThreadName) {
  const TraceContents t = read_trace_file(trace());
  ASSERT_TRUE(t.opened) << t.error;
  std::map<std::pair<K, std::string>, int> seen;
  std::vector<std::pair<K, std::string>> main_thread_stack;  // default-domain push/pop in order
  uint32_t main_tid = 0, end_tid = 0;
  uint64_t start_id = 0, end_id = 0;
  for (const fb::Marker& m : t.markers) {
    if (m.domain_id() && t.summary.name_of(m.domain_id()) == "gpuscope") continue;  // gpuscope's own notes
    if (m.kind() == K::ThreadName && label(t, m) != "trainer") continue;           // /proc names, sampled
    ++seen[{m.kind(), label(t, m)}];
    if (m.kind() == K::RangeStart) {
      main_tid = m.tid();
      start_id = m.correlation_id();
    }
    if (m.kind() == K::RangeEnd) {
      end_tid = m.tid();
      end_id = m.correlation_id();
    }
    if ((m.kind() == K::RangePush || m.kind() == K::RangePop) && m.domain_id() == 0)
      main_thread_stack.emplace_back(m.kind(), label(t, m));
  }
  const std::map<std::pair<K, std::string>, int> expected = {
      {{K::ThreadName, "trainer"}, 1},
      {{K::RangeStart, "prefetch"}, 1},
      {{K::RangeEnd, ""}, 1},
      {{K::RangePush, "load"}, 1},
      {{K::RangePush, "train_step"}, 3},
      {{K::RangePush, "forward"}, 3},
      {{K::RangePush, "\xC3\xA9valuation"}, 1},  // wide message, as UTF-8
      {{K::RangePop, ""}, 8},
      {{K::RangePush, "checkpoint@io"}, 1},       // registered string, "io" domain
      {{K::RangePop, "@io"}, 1},
      {{K::Instant, "flush@io"}, 1},
      {{K::Instant, "epoch_end"}, 1},
      {{K::Instant, "checkpoint \xE2\x9C\x93"}, 1},
  };
  EXPECT_EQ(seen, expected);
  // Start on the main thread, end on the worker, same id.
  EXPECT_NE(start_id, 0u);
  EXPECT_EQ(start_id, end_id);
  EXPECT_NE(main_tid, end_tid);
  // Nesting, in recorded order: load, then 3x train_step[forward], then évaluation.
  std::vector<std::string> order;
  for (const auto& [kind, name] : main_thread_stack) order.push_back(kind == K::RangePush ? name : ")");
  const std::vector<std::string> nested = {"load", ")", "train_step", "forward", ")", ")", "train_step", "forward",
                                           ")", ")", "train_step", "forward", ")", ")", "\xC3\xA9valuation", ")"};
  EXPECT_EQ(order, nested);
  for (const uint64_t d : t.summary.drops) EXPECT_EQ(d, 0u);
}

TEST_F(Nvtx, AnalyzeListsTheRangesWithCountsNestingAndFindingsNameTheirRange) {
  const json j = analyze({"--top", "20"});
  ASSERT_FALSE(j.is_discarded());
  const json& n = j["nvtx"];
  EXPECT_EQ(n["unmatched_pops"], 0);
  EXPECT_EQ(n["unmatched_ends"], 0);
  EXPECT_EQ(n["unterminated"], 0);
  EXPECT_TRUE(n["scope"].is_null());
  std::map<std::string, json> by_name;
  for (const json& r : n["ranges"]) by_name[r["name"].get<std::string>() + "@" + r["domain"].get<std::string>()] = r;
  ASSERT_TRUE(by_name.count("train_step@") && by_name.count("forward@") && by_name.count("checkpoint@io") &&
              by_name.count("prefetch@") && by_name.count("load@"))
      << n.dump(2);
  EXPECT_EQ(by_name["train_step@"]["count"], 3);
  EXPECT_EQ(by_name["forward@"]["count"], 3);
  EXPECT_EQ(by_name["forward@"]["max_depth"], 1);
  EXPECT_EQ(by_name["prefetch@"]["start_end"], true);
  // The checkpoint's 20 synchronizations ran inside it, the loads' copies inside load.
  EXPECT_GT(by_name["checkpoint@io"]["blocked_s"].value("synchronization", 0.0), 0.0);
  EXPECT_GT(by_name["load@"]["blocked_s"].value("copies", 0.0), 0.0);
  EXPECT_EQ(by_name["load@"]["blocked_s"].value("synchronization", 0.0), 0.0);
  bool some_finding_named_a_range = false;
  for (const json& f : j["findings"]) some_finding_named_a_range |= !f["range"].is_null();
  EXPECT_TRUE(some_finding_named_a_range) << j["findings"].dump(2);
}

TEST_F(Nvtx, RangeScopeNarrowsTheFiguresToThatPhase) {
  const json all = analyze({});
  const json load = analyze({"--range", "load"});
  const json checkpoint = analyze({"--range", "checkpoint"});
  ASSERT_FALSE(all.is_discarded() || load.is_discarded() || checkpoint.is_discarded());
  EXPECT_EQ(load["nvtx"]["scope"]["range"], "load");
  EXPECT_EQ(load["nvtx"]["scope"]["spans"], 1);
  EXPECT_LT(load["breakdown"]["wall_s"].get<double>(), all["breakdown"]["wall_s"].get<double>());
  // load: the 4 host-to-device copies and nothing else; checkpoint: its 20 syncs and one copy back.
  EXPECT_EQ(load["metrics"]["h2d_copies"], 4);
  EXPECT_EQ(load["metrics"]["d2h_copies"], 0);
  EXPECT_EQ(load["metrics"]["syncs"], 0);
  EXPECT_EQ(checkpoint["metrics"]["h2d_copies"], 0);
  EXPECT_EQ(checkpoint["metrics"]["d2h_copies"], 1);
  EXPECT_EQ(checkpoint["metrics"]["syncs"], 20);
  EXPECT_GT(all["metrics"]["syncs"].get<int>(), 20);
  EXPECT_EQ(all["metrics"]["d2h_copies"], 2);  // the checkpoint's and the final round trip
  EXPECT_EQ(all["metrics"]["h2d_copies"], 4);
}

TEST_F(Nvtx, RangeNotInTheTraceIsOneLineAndStatus2) {
  const ProcessResult r = run({gpuscope_exe(), "analyze", trace(), "--range", "no_such_phase"});
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
  EXPECT_NE(r.err.find("--range no_such_phase"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no NVTX range"), std::string::npos) << r.err;
}

TEST_F(Nvtx, TextReportHasTheRangesSectionAndTheScopeLine) {
  const ProcessResult whole = run({gpuscope_exe(), "analyze", trace()});
  ASSERT_EQ(whole.exit_code(), 0) << whole.err;
  EXPECT_NE(whole.out.find("NVTX RANGES"), std::string::npos) << whole.out;
  EXPECT_NE(whole.out.find("checkpoint [io]"), std::string::npos) << whole.out;
  const ProcessResult scoped = run({gpuscope_exe(), "analyze", trace(), "--range", "checkpoint"});
  ASSERT_EQ(scoped.exit_code(), 0) << scoped.err;
  EXPECT_NE(scoped.out.find("scope: NVTX range \"checkpoint\": 1 span(s)"), std::string::npos) << scoped.out;
}

TEST_F(Nvtx, InjectionEntryPointIsIdempotent) {
  TempDir dir;
  const ProcessResult r = run({gpuscope_exe(), "run", "-q", "-o", dir.file("twice.gpuscope"), "--",
                               bin("nvtx_inject_twice")},
                              sample_env());
  EXPECT_EQ(r.exit_code(), 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ok\n");
}

TEST_F(Nvtx, UserChosenInjectionIsKeptAndTheProgramIsUnchangedWithoutGpuscope) {
  const std::vector<std::string> argv = [] {
    std::vector<std::string> a = {bin("nvtx_phases")};
    a.insert(a.end(), kSampleArgs.begin(), kSampleArgs.end());
    return a;
  }();
  const ProcessResult plain = run(argv, sample_env());  // NVTX_INJECTION64_PATH unset: NVTX is a no-op
  EXPECT_EQ(plain.exit_code(), 0) << plain.err;
  EXPECT_NE(plain.out.find("nvtx_phases: load 4 copies, 3 train steps, 20 checkpoint rounds"), std::string::npos);
  EXPECT_EQ(plain.err, "");
  // A user's own NVTX tool keeps its place: a path that does not load makes
  // NVTX a no-op again, so the trace has no NVTX ranges, and the program still succeeds.
  TempDir dir;
  const std::string path = dir.file("kept.gpuscope");
  std::vector<std::string> traced = {gpuscope_exe(), "run", "-q", "-o", path, "--"};
  traced.insert(traced.end(), argv.begin(), argv.end());
  std::vector<std::string> env = sample_env();
  env.push_back("NVTX_INJECTION64_PATH=/nonexistent/libusertool.so");
  const ProcessResult kept = run(traced, env);
  EXPECT_EQ(kept.exit_code(), 0) << kept.err;
  const TraceContents t = read_trace_file(path);
  EXPECT_EQ(std::count_if(t.markers.begin(), t.markers.end(), [](const fb::Marker& m) { return m.kind() == K::RangePush; }),
            0);
}

}  // namespace
}  // namespace gpuscope::test
