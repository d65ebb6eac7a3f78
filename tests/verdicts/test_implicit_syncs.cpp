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

  static bool dropped_events(const json& j) {
    for (const auto& line : j["coverage"])
      if (line.is_string() && line.get<std::string>().starts_with("dropped events:") &&
          line.get<std::string>() != "dropped events: none")
        return true;
    return false;
  }

  static uint64_t tally(const json& j, const std::string& cause) {
    for (const auto& c : j["implicit_syncs"])
      if (c["cause"] == cause) return c["calls"].get<uint64_t>();
    ADD_FAILURE() << "no cause " << cause << " in " << j["implicit_syncs"].dump();
    return 0;
  }

  struct Case {
    std::string which;    // --case
    int iters;
    std::string cause;    // JSON id in implicit_syncs
    uint64_t calls;       // what the program made of that cause
    std::string label;    // how the finding's evidence starts naming it
    std::string function; // a call site of the finding
  };

  // The case's finding names the cause with its calls, a call site and a
  // fix; its --fixed variant has none of that cause (beyond `fixed_calls`)
  // and no finding. Returns the case's analysis.
  json expect_named_and_fixed(const Case& c, uint64_t fixed_calls = 0) {
    const json j = analyze(c.which, {"--iters=" + std::to_string(c.iters)});
    if (j.is_discarded()) {
      ADD_FAILURE() << "unparsable analysis of " << c.which;
      return j;
    }
    // Exact, unless the trace says it dropped events (a writer starved by a
    // loaded machine: drop-and-count is the design); then what it kept.
    const uint64_t counted = tally(j, c.cause);
    if (dropped_events(j)) {
      EXPECT_LE(counted, c.calls) << c.which;
      EXPECT_GT(counted, 0u) << c.which;
    } else {
      EXPECT_EQ(counted, c.calls) << c.which;
    }
    const json* f = finding(j);
    EXPECT_NE(f, nullptr) << j["findings"].dump(2);
    if (f != nullptr) {
      const std::string evidence = (*f)["evidence"].dump();
      EXPECT_NE(evidence.find(c.label + ": " + std::to_string(counted) + " "), std::string::npos) << evidence;
      bool site = false;
      for (const auto& s : (*f)["call_sites"]) site |= s["function"] == c.function;
      EXPECT_TRUE(site) << (*f)["call_sites"].dump(2);
      EXPECT_FALSE((*f)["fix"].get<std::string>().empty());
    }
    const json fixed = analyze(c.which, {"--iters=" + std::to_string(c.iters), "--fixed"});
    EXPECT_EQ(tally(fixed, c.cause), fixed_calls) << c.which << " --fixed";
    EXPECT_EQ(finding(fixed), nullptr) << fixed["findings"].dump(2);
    return j;
  }

  TempDir dir_;
  int n_ = 0;
};

TEST_F(ImplicitSyncs, PageableAsyncCopiesAreNamedAndPinnedOnesAreNot) {
  // One copy up and one down per iteration; the host waited for most of them.
  const json j = expect_named_and_fixed({"pageable_async", 4000, "pageable_async_copy", 8000,  // long enough to judge
                                         "cudaMemcpyAsync from/to pageable memory (the host waits for the copy)",
                                         "cudaMemcpyAsync"});
  // The host waited for the copies: copy time, which the PCIe finding holds
  // (pageable memory is its first fix), not a second share for the verdict.
  EXPECT_EQ(j["metrics"]["implicit_sync_share"].get<double>(), 0.0);
  EXPECT_EQ(j["verdict"]["class"], "pcie_bound") << j["findings"].dump(2);
}

TEST_F(ImplicitSyncs, CudaFreeInALoopIsNamedAndOneFreeAtTheEndIsNot) {
  expect_named_and_fixed({"free_loop", 2000, "free", 2000, "cudaFree/cudaFreeHost (waits for the device to drain)",
                          "cudaFree"},
                         1);
}

// The host blocks in every cudaMemset of pinned memory: nothing else holds
// it, so the implicit synchronization is the verdict.
TEST_F(ImplicitSyncs, MemsetOnPinnedMemoryIsSyncBoundAndItsAsyncFormIsNot) {
  const json j = expect_named_and_fixed({"pinned_memset", 8000, "host_visible_memset", 8000,  // long enough to judge
                                         "cudaMemset on pinned or managed memory (fully synchronous)", "cudaMemset"});
  EXPECT_EQ(j["verdict"]["class"], "sync_bound") << j["findings"].dump(2);
}

// Kernels on stream 0 between kernels on two blocking streams: each one
// waits for both. With the streams created non-blocking (recorded at their
// creation) stream 0 waits for nothing.
TEST_F(ImplicitSyncs, TheLegacyDefaultStreamMixedWithBlockingStreamsIsNamed) {
  expect_named_and_fixed({"legacy_mix", 3000, "legacy_default_stream", 3000,
                          "work on the legacy default stream while a blocking stream had work queued (they serialize)",
                          "__cudaLaunchKernel"});
}

TEST_F(ImplicitSyncs, AnEventQueryLoopIsNamedAndAnEventSynchronizeIsNot) {
  const json j = analyze("event_poll", {"--iters=1000"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_GE(tally(j, "poll_loop"), 1000u);  // at least one "not ready" per iteration: the kernel takes a while
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
