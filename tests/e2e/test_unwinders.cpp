// The fast stack walker against libunwind on a real traced program: the
// same sample, run once with each (GPUSCOPE_UNWINDER), records the same
// call stacks for the same calls — compared as module + offset, since the
// two runs load everything at different addresses.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

using Frame = std::pair<std::string, uint64_t>;  // module file name, offset from its load address

std::vector<Frame> relative(const TraceContents& t, const std::vector<uint64_t>& frames) {
  std::vector<Frame> out;
  for (uint64_t pc : frames) {
    Frame f{"?", pc};
    for (const auto& m : t.summary.modules)
      if (pc >= m.low_address && pc < m.high_address)
        f = {std::filesystem::path(m.path).filename().string(), pc - m.load_address};
    out.push_back(f);
  }
  return out;
}

// Every distinct (function, stack) pair of the trace's API calls.
std::set<std::pair<std::string, std::vector<Frame>>> call_stacks(const TraceContents& t) {
  std::set<std::pair<std::string, std::vector<Frame>>> out;
  for (const auto& c : t.api_calls) {
    if (c.stack_id() == 0) continue;
    auto it = t.summary.stacks.find(c.stack_id());
    if (it != t.summary.stacks.end()) out.insert({t.summary.name_of(c.function_id()), relative(t, it->second)});
  }
  return out;
}

TraceContents traced(const std::vector<std::string>& argv, const std::string& unwinder) {
  TempDir dir;
  const std::string out = dir.path() + "/t.gpuscope";
  const auto p = run(argv,
                     preload_env(out, {"LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR),
                                       "GPUSCOPE_UNWINDER=" + unwinder}));
  EXPECT_EQ(p.exit_code(), 0) << p.err;
  return read_trace_file(out);
}

void expect_same_stacks(const std::vector<std::string>& argv, size_t min_depth) {
  const auto fast = call_stacks(traced(argv, "fast"));
  const auto reference = call_stacks(traced(argv, "libunwind"));
  ASSERT_FALSE(reference.empty()) << "the program's calls should carry stacks";
  size_t deepest = 0;
  for (const auto& [function, frames] : reference) deepest = std::max(deepest, frames.size());
  EXPECT_GE(deepest, min_depth);
  EXPECT_EQ(fast, reference);
}

TEST(Unwinders, FastWalkerRecordsTheStacksLibunwindRecords) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  expect_same_stacks({bin("pcie_bound"), "--requests", "50"}, 5);
}

TEST(Unwinders, SameStacksThirtyTwoFramesDeep) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  if (!std::filesystem::exists(bin("hooked_call_loop"))) GTEST_SKIP() << "benchmarks not built";
  expect_same_stacks({bin("hooked_call_loop"), "stream_sync", "200"}, 32);
}

}  // namespace
}  // namespace gpuscope::test
