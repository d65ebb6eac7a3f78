// gpuscope diff end to end on simgpu: the sync-bound sample against its
// fixed version. The diff names the verdict change and the drop in sync
// time; gates fail (exit 1) only in the direction they guard; unreadable
// inputs and malformed gates are exit 2 with one line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e_support.h"
#include "../support/simgpu_segment.h"

namespace gpuscope::test {
namespace {

class Diff : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!simgpu_built()) return;
    dir_ = new TempDir;
    slow_ = trace("slow.gpuscope", {"--iters", "20000"});  // long enough to judge (kMinJudgedSeconds)
    fixed_ = trace("fixed.gpuscope", {"--iters", "20000", "--fixed"});
  }
  static void TearDownTestSuite() {
    delete dir_;
    remove_simgpu_segment(shared_id());
  }
  // The verdicts read simgpu's NVML: other tests' kernels stay out of it.
  static std::string shared_id() { return "gpuscope-e2e-diff-" + std::to_string(getpid()); }
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  }
  static std::string trace(const std::string& name, const std::vector<std::string>& args) {
    const std::string path = dir_->file(name);
    std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", path, "--", bin("sync_bound")};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run(argv, environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR), "SIMGPU_SHARED_ID=" + shared_id()}));
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    return path;
  }
  static ProcessResult diff(const std::string& base, const std::string& next, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {gpuscope_exe(), "diff", base, next};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, clean_env());
  }
  static inline TempDir* dir_ = nullptr;
  static inline std::string slow_, fixed_;
};

TEST_F(Diff, NamesTheVerdictChangeAndTheSyncTimeThatWentAway) {
  const auto r = diff(slow_, fixed_, {});
  ASSERT_EQ(r.exit_code(), 0) << r.err;  // no gate: nothing to fail
  EXPECT_NE(r.out.find("VERDICT CHANGED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("feeder blocked in syncs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ENVIRONMENT"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(diff(slow_, fixed_, {"--json"}).out);
  EXPECT_EQ(j["base"]["verdict"], "sync_bound");
  EXPECT_NE(j["new"]["verdict"], "sync_bound");
  double base_sync = -1, new_sync = -1;
  for (const auto& f : j["figures"])
    if (f["name"] == "sync_share") base_sync = f["base"].get<double>(), new_sync = f["new"].get<double>();
  EXPECT_GT(base_sync, new_sync + 0.03);
  for (const auto& e : j["environment"]) EXPECT_FALSE(e["changed"].get<bool>()) << e.dump();
}

TEST_F(Diff, GatesFailOnlyInTheDirectionTheyGuard) {
  // The fix made syncs cheaper: a gate on more sync time passes that way
  // round, and fails when the "fix" is the baseline (a regression).
  EXPECT_EQ(diff(slow_, fixed_, {"--fail-on", "sync_share>+3pp,driver-changed"}).exit_code(), 0);
  const auto regression = diff(fixed_, slow_, {"--fail-on", "sync_share>+3pp,driver-changed"});
  EXPECT_EQ(regression.exit_code(), 1) << regression.out;
  EXPECT_NE(regression.out.find("[FAIL] sync_share>+3pp"), std::string::npos) << regression.out;
  EXPECT_NE(regression.out.find("[pass] driver-changed"), std::string::npos) << regression.out;
  EXPECT_EQ(diff(slow_, fixed_, {"--fail-on", "verdict-changed"}).exit_code(), 1);
  EXPECT_EQ(diff(slow_, slow_, {"--fail-on", "verdict-changed,wall>+0.001%,env-changed"}).exit_code(), 0);
  const auto j = nlohmann::json::parse(diff(fixed_, slow_, {"--json", "--fail-on", "sync_share>+3pp"}).out);
  EXPECT_TRUE(j["failed"].get<bool>());
}

TEST_F(Diff, UnreadableInputAndMalformedGateAreExit2WithOneLine) {
  const auto missing = diff(slow_, dir_->file("nope.gpuscope"), {});
  EXPECT_EQ(missing.exit_code(), 2);
  EXPECT_NE(missing.err.find("nope.gpuscope"), std::string::npos) << missing.err;
  const auto bad = diff(slow_, fixed_, {"--fail-on", "walltime>+5%"});
  EXPECT_EQ(bad.exit_code(), 2);
  EXPECT_EQ(count_lines_with(bad.err, "gpuscope:"), 1) << bad.err;
  EXPECT_NE(bad.err.find("unknown figure 'walltime'"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gpuscope::test
