// Backpressure end to end: 64 threads of a CUDA program against 4 KiB
// thread buffers. Events are dropped, never waited for, and a call and its
// typed record are dropped together: every figure the trace gives (calls per
// function, copies, memsets, syncs) agrees with every other, and the drop
// count is exactly what was lost.
#include <gtest/gtest.h>

#include <set>

#include "e2e_support.h"

namespace gpuscope::test {
namespace {

std::set<uint64_t> correlation_ids(const auto& records) {
  std::set<uint64_t> ids;
  for (const auto& r : records) ids.insert(r.correlation_id());
  return ids;
}

std::set<uint64_t> calls_of(const TraceContents& t, const std::string& function) {
  std::set<uint64_t> ids;
  for (const auto& c : t.api_calls) {
    const auto name = t.summary.strings.find(c.function_id());
    if (name != t.summary.strings.end() && name->second == function) ids.insert(c.correlation_id());
  }
  return ids;
}

// Records of one set without a partner in the other, both ways.
size_t unpaired(const std::set<uint64_t>& a, const std::set<uint64_t>& b) {
  size_t n = 0;
  for (uint64_t id : a) n += b.contains(id) ? 0 : 1;
  for (uint64_t id : b) n += a.contains(id) ? 0 : 1;
  return n;
}

TEST(Backpressure, CallsAndTheirRecordsAreDroppedTogether) {
  if (!simgpu_built()) GTEST_SKIP() << "simgpu not built";
  constexpr uint64_t kThreads = 64, kRounds = 200;
  TempDir dir;
  const ProcessResult r =
      run({bin("cuda_threads"), "pairs:64:200"},
          preload_env(dir.path() + "/", {"GPUSCOPE_BUFFER_KB=4",
                                         "LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR)}));
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  ASSERT_EQ(traces_in(dir.path()).size(), 1u);
  const TraceContents t = read_trace_file(traces_in(dir.path()).front());
  ASSERT_TRUE(t.summary.end.has_value());

  const std::set<uint64_t> memcpy_calls = calls_of(t, "cudaMemcpy"), memset_calls = calls_of(t, "cudaMemset"),
                           sync_calls = calls_of(t, "cudaStreamSynchronize"), malloc_calls = calls_of(t, "cudaMalloc");
  EXPECT_EQ(unpaired(correlation_ids(t.copies), memcpy_calls), 0u) << t.copies.size() << " copies, "
                                                                   << memcpy_calls.size() << " cudaMemcpy calls";
  EXPECT_EQ(unpaired(correlation_ids(t.memsets), memset_calls), 0u) << t.memsets.size() << " memsets, "
                                                                    << memset_calls.size() << " cudaMemset calls";
  EXPECT_EQ(unpaired(correlation_ids(t.syncs), sync_calls), 0u) << t.syncs.size() << " syncs, " << sync_calls.size()
                                                                << " cudaStreamSynchronize calls";
  EXPECT_EQ(unpaired(correlation_ids(t.allocs), malloc_calls), 0u);

  // Every outermost call of the run is one of those pairs: cudaMalloc once,
  // then three per round. What is not in the trace is in the drop count,
  // two events per call.
  const uint64_t issued = 1 + 3 * kThreads * kRounds;
  const uint64_t kept = t.api_calls.size();
  EXPECT_EQ(kept, memcpy_calls.size() + memset_calls.size() + sync_calls.size() + malloc_calls.size());
  EXPECT_LT(kept, issued) << "the buffers never filled: nothing was tested";
  EXPECT_EQ(t.summary.drops[static_cast<size_t>(fb::DropReason::BufferFull)], 2 * (issued - kept));
  EXPECT_EQ(t.summary.dropped_total(), 2 * (issued - kept));
}

}  // namespace
}  // namespace gpuscope::test
