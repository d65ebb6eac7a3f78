// gpuscope diff's gates and report on hand-built run snapshots: the gate
// grammar (and its one-line refusals), each gate kind failing exactly when
// its change crosses the threshold, unknown figures left unevaluated, and
// the text/JSON outputs naming what changed.
#include <gtest/gtest.h>

#include "diff_report.h"
#include "gates.h"

namespace gpuscope::analyzer {
namespace {

RunSnapshot run(double wall, double sync_share, const std::string& verdict, const std::string& driver) {
  RunSnapshot s;
  s.path = verdict + ".gpuscope";
  s.program = "/bin/app";
  s.verdict_class = verdict;
  s.verdict_headline = verdict + " (50% of wall time), confidence medium";
  s.figures = {{"wall", wall}, {"sync_share", sync_share}, {"h2d_bytes", 1e9}, {"dropped", 0}};
  for (const auto& key : environment_keys()) s.environment[key] = "same";
  s.environment["driver"] = driver;
  return s;
}

std::vector<Gate> gates(const std::string& spec) {
  std::vector<Gate> out;
  std::string error;
  EXPECT_TRUE(parse_gates(spec, &out, &error)) << error;
  return out;
}

std::string refusal(const std::string& spec) {
  std::vector<Gate> out;
  std::string error;
  EXPECT_FALSE(parse_gates(spec, &out, &error)) << spec;
  return error;
}

GateResult::Status outcome(const std::string& spec, const RunSnapshot& base, const RunSnapshot& next) {
  const auto results = evaluate_gates(gates(spec), base, next);
  EXPECT_EQ(results.size(), 1u);
  return results.empty() ? GateResult::Status::NotEvaluated : results[0].status;
}

using S = GateResult::Status;

TEST(DiffGates, ParsesEveryForm) {
  const auto g = gates("wall>+5%, sync_share>+3pp,dropped>+0,copy_gbps<-10%,verdict-changed,driver-changed,env-changed");
  ASSERT_EQ(g.size(), 7u);
  EXPECT_EQ(g[0].kind, Gate::Kind::Relative);
  EXPECT_DOUBLE_EQ(g[0].threshold, 5);
  EXPECT_EQ(g[1].kind, Gate::Kind::Points);
  EXPECT_EQ(g[1].subject, "sync_share");
  EXPECT_EQ(g[2].kind, Gate::Kind::Absolute);
  EXPECT_FALSE(g[3].above);
  EXPECT_DOUBLE_EQ(g[3].threshold, -10);
  EXPECT_EQ(g[4].kind, Gate::Kind::VerdictChanged);
  EXPECT_EQ(g[5].subject, "driver");
  EXPECT_TRUE(g[6].subject.empty());
}

TEST(DiffGates, MalformedGatesAreRefusedNamingTheGate) {
  EXPECT_NE(refusal("walltime>+5%").find("unknown figure 'walltime'"), std::string::npos);
  EXPECT_NE(refusal("wall>+5pp").find("shares only"), std::string::npos);
  EXPECT_NE(refusal("wall>five%").find("'wall>five%'"), std::string::npos);
  EXPECT_NE(refusal("wall").find("expected FIGURE"), std::string::npos);
  EXPECT_NE(refusal("kernel-changed").find("unknown"), std::string::npos);
  EXPECT_NE(refusal(" , ").find("no gate"), std::string::npos);
  EXPECT_FALSE(refusal("wall>+inf%").empty());
}

TEST(DiffGates, RelativeGateFailsOnlyBeyondItsThreshold) {
  const RunSnapshot base = run(1.00, 0.10, "sync_bound", "580");
  EXPECT_EQ(outcome("wall>+5%", base, run(1.04, 0.10, "sync_bound", "580")), S::Pass);
  EXPECT_EQ(outcome("wall>+5%", base, run(1.06, 0.10, "sync_bound", "580")), S::Fail);
  EXPECT_EQ(outcome("wall<-5%", base, run(0.90, 0.10, "sync_bound", "580")), S::Fail);
  EXPECT_EQ(outcome("wall<-5%", base, run(1.50, 0.10, "sync_bound", "580")), S::Pass);
}

TEST(DiffGates, PointsGateReadsSharesInPercentagePoints) {
  const RunSnapshot base = run(1.0, 0.10, "sync_bound", "580");
  EXPECT_EQ(outcome("sync_share>+3pp", base, run(1.0, 0.12, "sync_bound", "580")), S::Pass);
  EXPECT_EQ(outcome("sync_share>+3pp", base, run(1.0, 0.14, "sync_bound", "580")), S::Fail);
}

TEST(DiffGates, AbsoluteGateAndAZeroBase) {
  const RunSnapshot base = run(1.0, 0.1, "sync_bound", "580");
  RunSnapshot next = base;
  next.figures["dropped"] = 3;
  EXPECT_EQ(outcome("dropped>+0", base, base), S::Pass);
  EXPECT_EQ(outcome("dropped>+0", base, next), S::Fail);
  EXPECT_EQ(outcome("dropped>+50%", base, next), S::Fail);  // from 0: any growth is infinite
}

TEST(DiffGates, VerdictAndEnvironmentChanges) {
  const RunSnapshot base = run(1.0, 0.1, "sync_bound", "580");
  EXPECT_EQ(outcome("verdict-changed", base, run(1.0, 0.1, "sync_bound", "590")), S::Pass);
  EXPECT_EQ(outcome("verdict-changed", base, run(1.0, 0.1, "pcie_bound", "580")), S::Fail);
  EXPECT_EQ(outcome("driver-changed", base, run(1.0, 0.1, "sync_bound", "590")), S::Fail);
  EXPECT_EQ(outcome("gpu-changed", base, run(1.0, 0.1, "sync_bound", "590")), S::Pass);
  EXPECT_EQ(outcome("env-changed", base, run(1.0, 0.1, "sync_bound", "590")), S::Fail);
}

TEST(DiffGates, UnknownFigureIsNotEvaluatedAndSaysWhy) {
  const RunSnapshot base = run(1.0, 0.1, "sync_bound", "580");
  const auto results = evaluate_gates(gates("gpu_busy<-5pp"), base, base);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, S::NotEvaluated);
  EXPECT_NE(results[0].detail.find("gpu_busy unknown in the base run"), std::string::npos);
}

TEST(DiffReport, TextAndJsonNameTheChanges) {
  RunSnapshot base = run(1.0, 0.10, "sync_bound", "580");
  RunSnapshot next = run(1.2, 0.30, "pcie_bound", "590");
  base.kernels = {{"scale", 100}, {"gone", 5}};
  next.kernels = {{"scale", 400}};
  next.call_sites["cudaMemcpy at load (app.cu:42)"] = {10, 0.5};
  const auto results = evaluate_gates(gates("wall>+5%,driver-changed,sync_share>+50pp"), base, next);
  const DiffInput in{base, next, results, 10};
  const std::string text = diff_text(in);
  EXPECT_NE(text.find("VERDICT CHANGED"), std::string::npos) << text;
  EXPECT_NE(text.find("+20.0%"), std::string::npos) << text;       // wall
  EXPECT_NE(text.find("+20.0 pp"), std::string::npos) << text;     // sync share
  EXPECT_NE(text.find("580 -> 590   CHANGED"), std::string::npos) << text;
  EXPECT_NE(text.find("[FAIL] wall>+5%"), std::string::npos) << text;
  EXPECT_NE(text.find("[pass] sync_share>+50pp"), std::string::npos) << text;
  EXPECT_LT(text.find("scale"), text.find("gone")) << text;  // most changed first
  EXPECT_NE(text.find("cudaMemcpy at load (app.cu:42)"), std::string::npos) << text;
  const auto json = diff_json(in);
  EXPECT_TRUE(json["failed"].get<bool>());
  EXPECT_TRUE(json["verdict_changed"].get<bool>());
  EXPECT_EQ(json["gates"].size(), 3u);
  EXPECT_EQ(json["kernels"][0]["name"], "scale");
}

}  // namespace
}  // namespace gpuscope::analyzer
