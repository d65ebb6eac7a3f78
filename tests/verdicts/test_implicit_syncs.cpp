// Implicit synchronization end to end (issue 18 item 10): each case of
// tests/verdicts/programs/implicit_syncs.cu traced on simgpu gets the
// sync.implicit_synchronization finding naming its cause with the count the
// program made and its call site, the JSON tally says the same, and the
// --fixed variant gets no such finding. Run alone (RUN_SERIAL), like the
// other verdict tests: the shares are about where time goes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../e2e/e2e_support.h"

namespace gpuscope::test {
namespace {

using nlohmann::json;

constexpr const char* kFinding = "sync.implicit_synchronization";

class ImplicitSyncs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!simgpu_built()) GTEST_SKIP() << "simgpu is not built";
  }

  // Traces `implicit_syncs --case NAME ARGS...` on simgpu; the analysis.
  json analyze(const std::string& which, std::vector<std::string> args = {}) {
    const std::string path = dir_.file(which + std::to_string(++n_) + ".gpuscope");
    std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", path, "--", bin("implicit_syncs"), "--case",
                                     which};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto ran = run(argv, environment_with({"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)},
                                                {"LD_PRELOAD", "GPUSCOPE_OUTPUT", "SIMGPU_NODE"}));
    EXPECT_EQ(ran.exit_code(), 0) << ran.err;
    const auto r = run({gpuscope_exe(), "analyze", "--json", path});
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  static const json* finding(const json& j) {
    for (const auto& f : j["findings"])
      if (f["id"] == kFinding) return &f;
    return nullptr;
  }

  static uint64_t tally(const json& j, const std::string& cause) {
    for (const auto& c : j["implicit_syncs"])
      if (c["cause"] == cause) return c["calls"].get<uint64_t>();
    ADD_FAILURE() << "no cause " << cause << " in " << j["implicit_syncs"].dump();
    return 0;
  }

  // The finding names the cause with `calls` calls and has a site of `function`.
  static void expect_named(const json& j, const std::string& label_start, uint64_t calls,
                           const std::string& function) {
    const json* f = finding(j);
    ASSERT_NE(f, nullptr) << j["findings"].dump(2);
    const std::string evidence = (*f)["evidence"].dump();
    EXPECT_NE(evidence.find(label_start), std::string::npos) << evidence;
    EXPECT_NE(evidence.find(": " + std::to_string(calls) + " "), std::string::npos) << evidence;
    bool site = false;
    for (const auto& s : (*f)["call_sites"]) site |= s["function"] == function;
    EXPECT_TRUE(site) << (*f)["call_sites"].dump(2);
    EXPECT_FALSE((*f)["fix"].get<std::string>().empty());
  }

  TempDir dir_;
  int n_ = 0;
};

TEST_F(ImplicitSyncs, PageableAsyncCopiesAreNamedAndPinnedOnesAreNot) {
  const json j = analyze("pageable_async", {"--iters=1000"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(tally(j, "pageable_async_copy"), 2000u);  // one up, one down per iteration
  expect_named(j, "cudaMemcpyAsync from/to pageable memory", 2000, "cudaMemcpyAsync");
  EXPECT_GT(j["metrics"]["implicit_sync_share"].get<double>(), 0.25);  // the host waited for most of them
  const json fixed = analyze("pageable_async", {"--iters=1000", "--fixed"});
  EXPECT_EQ(tally(fixed, "pageable_async_copy"), 0u);
  EXPECT_EQ(finding(fixed), nullptr) << fixed["findings"].dump(2);
}

TEST_F(ImplicitSyncs, CudaFreeInALoopIsNamedAndOneFreeAtTheEndIsNot) {
  const json j = analyze("free_loop", {"--iters=2000"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(tally(j, "free"), 2000u);
  expect_named(j, "cudaFree/cudaFreeHost", 2000, "cudaFree");
  const json fixed = analyze("free_loop", {"--iters=2000", "--fixed"});
  EXPECT_EQ(tally(fixed, "free"), 1u);
  EXPECT_EQ(finding(fixed), nullptr) << fixed["findings"].dump(2);
}

// The host blocks in every cudaMemset of pinned memory: nothing else holds
// it, so the implicit synchronization is the verdict.
TEST_F(ImplicitSyncs, MemsetOnPinnedMemoryIsSyncBoundAndItsAsyncFormIsNot) {
  const json j = analyze("pinned_memset", {"--iters=2000"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(tally(j, "host_visible_memset"), 2000u);
  expect_named(j, "cudaMemset on pinned or managed memory", 2000, "cudaMemset");
  EXPECT_EQ(j["verdict"]["class"], "sync_bound") << j["findings"].dump(2);
  const json fixed = analyze("pinned_memset", {"--iters=2000", "--fixed"});
  EXPECT_EQ(tally(fixed, "host_visible_memset"), 0u);
  EXPECT_EQ(finding(fixed), nullptr) << fixed["findings"].dump(2);
}

// Kernels on stream 0 between kernels on two blocking streams: each one
// waits for both. With the streams created non-blocking (recorded at their
// creation) stream 0 waits for nothing.
TEST_F(ImplicitSyncs, TheLegacyDefaultStreamMixedWithBlockingStreamsIsNamed) {
  const json j = analyze("legacy_mix", {"--iters=3000"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(tally(j, "legacy_default_stream"), 3000u);
  expect_named(j, "work on the legacy default stream", 3000, "__cudaLaunchKernel");
  const json fixed = analyze("legacy_mix", {"--iters=3000", "--fixed"});
  EXPECT_EQ(tally(fixed, "legacy_default_stream"), 0u);
  EXPECT_EQ(finding(fixed), nullptr) << fixed["findings"].dump(2);
}

TEST_F(ImplicitSyncs, AnEventQueryLoopIsNamedAndAnEventSynchronizeIsNot) {
  const json j = analyze("event_poll", {"--iters=1000"});
  ASSERT_FALSE(j.is_discarded());
  const uint64_t polls = tally(j, "poll_loop");
  EXPECT_GE(polls, 1000u);  // at least one "not ready" per iteration: the kernel takes a while
  const json* f = finding(j);
  ASSERT_NE(f, nullptr) << j["findings"].dump(2);
  EXPECT_NE((*f)["evidence"].dump().find("stream/event queries polled in a loop"), std::string::npos);
  EXPECT_NE((*f)["fix"].get<std::string>().find("cudaEventBlockingSync"), std::string::npos);
  const json fixed = analyze("event_poll", {"--iters=1000", "--fixed"});
  EXPECT_EQ(tally(fixed, "poll_loop"), 0u);
  EXPECT_EQ(finding(fixed), nullptr) << fixed["findings"].dump(2);
}

}  // namespace
}  // namespace gpuscope::test
