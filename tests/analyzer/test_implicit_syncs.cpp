// Implicit synchronization (analyzer/model/implicit_syncs.h and the
// sync.implicit_synchronization rule) on hand-built traces: which calls are
// counted under which cause, with what host time and call site, which are
// not, what clears "work queued", and how the finding's share and severity
// follow from them without counting poll time twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../support/model_of.h"
#include "../support/sample_trace.h"
#include "metrics.h"
#include "record_flags.h"
#include "rules.h"

namespace gpuscope::test {
namespace {

using analyzer::ImplicitCause;
constexpr uint64_t kT0 = 5'000'000'000, kMs = 1'000'000, kWall = 100 * kMs;
constexpr uint32_t kTid = 7;
enum Fn : uint32_t {
  kMemcpyAsync = 1, kMemcpy, kMemset, kMemsetAsync, kMemsetD32, kFree, kFreeHost, kFreeAsync, kMalloc, kMallocAsync,
  kLaunch, kDeviceSync, kStreamSync, kEventQuery, kStreamCreate, kStreamCreateWithFlags, kEventSync
};
constexpr uint64_t kStreamA = 0xA0, kStreamB = 0xB0;

// Records are added in call order, 10 us apart, each call `duration` long.
class TraceBuilder {
 public:
  uint64_t call(uint32_t fn, uint64_t stream = 0, uint64_t duration = 1'000, int32_t result = 0,
                uint32_t repeat = 0, uint8_t flags = 0, uint32_t stack = 0) {
    const uint64_t corr = ++corr_;
    now_ += 10'000;
    calls_.emplace_back(now_, duration, corr, stream, kTid, stack, result, fn, 0, flags, 0, repeat);
    return corr;
  }
  void copy(uint32_t fn, bool async, fb::MemoryKind host, uint16_t extra_flags = 0, uint64_t duration = 1'000) {
    const uint64_t corr = call(fn, kStreamA, duration, 0, 0, 0, 3);
    copies_.emplace_back(now_, duration, corr, 4096, kStreamA, fb::CopyDirection::HostToDevice, host,
                         fb::MemoryKind::Device, fb::Source::Host, 0,
                         static_cast<uint16_t>((async ? container::kCopyAsync : 0) | extra_flags));
  }
  void memset(uint32_t fn, fb::MemoryKind kind, uint64_t duration = 1'000) {
    const uint64_t corr = call(fn, 0, duration, 0, 0, 0, 4);
    memsets_.emplace_back(now_, duration, corr, 4096, 0, 0, kind, fb::Source::Host, 0);
  }
  std::vector<uint8_t> bytes() const {
    capture::ProcessMetadata meta;
    meta.pid = 11;
    meta.exe = "/app/implicit";
    meta.start_monotonic_ns = kT0;
    return one_frame_trace(meta, kT0 + kWall, [&](capture::ChunkBuilder& b) {
      b.add_strings({{kMemcpyAsync, "cudaMemcpyAsync"}, {kMemcpy, "cudaMemcpy"}, {kMemset, "cudaMemset"},
                     {kMemsetAsync, "cudaMemsetAsync"}, {kMemsetD32, "cuMemsetD32_v2"}, {kFree, "cudaFree"},
                     {kFreeHost, "cudaFreeHost"}, {kFreeAsync, "cudaFreeAsync"}, {kMalloc, "cudaMalloc"},
                     {kMallocAsync, "cudaMallocAsync"}, {kLaunch, "__cudaLaunchKernel"},
                     {kDeviceSync, "cudaDeviceSynchronize"}, {kStreamSync, "cudaStreamSynchronize"},
                     {kEventQuery, "cudaEventQuery"}, {kStreamCreate, "cudaStreamCreate"},
                     {kStreamCreateWithFlags, "cudaStreamCreateWithFlags"}, {kEventSync, "cudaEventSynchronize"}});
      for (const auto& c : calls_) b.add(c);
      for (const auto& c : copies_) b.add(c);
      for (const auto& m : memsets_) b.add(m);
    });
  }
  analyzer::TraceModel model() const { return model_of(bytes()); }

 private:
  uint64_t now_ = kT0, corr_ = 0;
  std::vector<fb::ApiCall> calls_;
  std::vector<fb::Copy> copies_;
  std::vector<fb::Memset> memsets_;
};

const analyzer::ImplicitCauseStats& cause(const analyzer::TraceModel& m, ImplicitCause c) {
  return m.implicit_syncs.of(c);
}

const analyzer::Finding* implicit_finding(const analyzer::Analysis& a) {
  for (const auto& f : a.findings)
    if (f.id == "sync.implicit_synchronization") return &f;
  return nullptr;
}

analyzer::Analysis analysis_of(const analyzer::TraceModel& m) { return analyzer::analyze(m, analyzer::compute_metrics(m)); }

// The same, judged as if the run had the minimum evidence for a verdict:
// for the rule's own thresholds, which a short run's floor would demote.
analyzer::Analysis judged_analysis_of(const analyzer::TraceModel& m) {
  analyzer::Metrics x = analyzer::compute_metrics(m);
  x.judged_s = std::max(x.judged_s, analyzer::kMinJudgedSeconds);
  x.launches = std::max<uint64_t>(x.launches, analyzer::kMinWorkCalls);
  return analyzer::analyze(m, x);
}

TEST(ImplicitSyncTally, OnlyAsyncCopiesFromPageableMemoryCountWithTheirHostTimeAndSite) {
  TraceBuilder t;
  t.copy(kMemcpyAsync, true, fb::MemoryKind::Pageable, 0, 7'000);  // counts
  t.copy(kMemcpyAsync, true, fb::MemoryKind::Pinned);               // really asynchronous
  t.copy(kMemcpy, false, fb::MemoryKind::Pageable);                 // synchronous by its name
  t.copy(kMemcpyAsync, true, fb::MemoryKind::Managed, container::kCopyPrefetch);  // a prefetch
  const auto m = t.model();
  const auto& s = cause(m, ImplicitCause::PageableAsyncCopy);
  EXPECT_EQ(s.total.calls, 1u);
  EXPECT_EQ(s.total.ns, 7'000u);
  ASSERT_EQ(s.sites.size(), 1u);
  EXPECT_EQ(s.sites.begin()->first, (uint64_t{kMemcpyAsync} << 32) | 3);
  // Named, but its time is copy time (the PCIe finding's), not the implicit share's.
  EXPECT_EQ(m.implicit_syncs.blocked_ns_by_thread.count(kTid), 0u);
}

TEST(ImplicitSyncTally, OnlySynchronousMemsetsOfHostVisibleMemoryCount) {
  TraceBuilder t;
  t.memset(kMemset, fb::MemoryKind::Pinned);        // counts
  t.memset(kMemsetD32, fb::MemoryKind::Managed);    // counts (driver API)
  t.memset(kMemset, fb::MemoryKind::Registered);    // counts
  t.memset(kMemsetAsync, fb::MemoryKind::Pinned);   // asynchronous
  t.memset(kMemset, fb::MemoryKind::Device);        // asynchronous to the host on device memory
  EXPECT_EQ(cause(t.model(), ImplicitCause::HostVisibleMemset).total.calls, 3u);
}

TEST(ImplicitSyncTally, FreesCountButNotStreamOrderedOrFailingOnes) {
  TraceBuilder t;
  t.call(kFree);
  t.call(kFreeHost);
  t.call(kFreeAsync, kStreamA);
  t.call(kFree, 0, 1'000, 1);  // cudaErrorInvalidValue: freed nothing
  EXPECT_EQ(cause(t.model(), ImplicitCause::Free).total.calls, 2u);
}

TEST(ImplicitSyncTally, AnAllocationCountsOnlyWithWorkQueuedSinceTheLastSynchronization) {
  TraceBuilder t;
  t.call(kMalloc);                // nothing queued yet
  t.call(kLaunch, kStreamA);
  t.call(kMalloc);                // counts
  t.call(kMallocAsync, kStreamA); // stream-ordered: never
  t.call(kDeviceSync);
  t.call(kMalloc);                // the device was drained
  t.call(kLaunch, kStreamA);
  t.call(kStreamSync, kStreamA);
  t.call(kMalloc);                // that stream was synchronized
  t.call(kLaunch, kStreamB);
  t.call(kFree);                  // a free drains the device
  t.call(kMalloc);
  EXPECT_EQ(cause(t.model(), ImplicitCause::AllocationWithWorkQueued).total.calls, 1u);
}

TEST(ImplicitSyncTally, LegacyStreamWorkCountsOnlyWhileABlockingStreamHasWorkQueued) {
  TraceBuilder t;
  t.call(kStreamCreate, kStreamA);                                               // blocking
  t.call(kStreamCreateWithFlags, kStreamB, 1'000, 0, 0, container::kCallNonBlockingStream);
  t.call(kLaunch, kStreamB);
  t.call(kLaunch, 0);                                          // B does not block: no
  t.call(kLaunch, kStreamA);
  t.call(kLaunch, 0);                                          // counts
  t.call(kLaunch, 0x1);                                        // cudaStreamLegacy: counts
  t.call(kLaunch, 0, 1'000, 0, 0, container::kCallPerThreadStream);  // the per-thread default stream is not legacy
  t.call(kStreamSync, kStreamA);
  t.call(kLaunch, 0);                                          // counts: the per-thread stream blocks too
  t.call(kDeviceSync);
  t.call(kLaunch, 0x2);                                        // cudaStreamPerThread: not legacy
  t.call(kStreamSync, 0x2);
  t.call(kLaunch, 0);                                          // everything drained: no
  const auto m = t.model();
  EXPECT_EQ(cause(m, ImplicitCause::LegacyStreamMix).total.calls, 3u);
  EXPECT_EQ(m.implicit_syncs.nonblocking_streams, 1u);
  EXPECT_EQ(m.implicit_syncs.blocking_streams_used, 2u);  // A and the thread's per-thread default stream
  // The legacy stream blocks streams, not the host: no share.
  EXPECT_EQ(m.implicit_syncs.blocked_ns_by_thread.count(kTid), 0u);
}

TEST(ImplicitSyncTally, PollLoopsCountTheirPollsAndStayOutOfTheShare) {
  TraceBuilder t;
  t.call(kLaunch, kStreamA);
  t.call(kEventQuery, 0, 30 * kMs, 600, 5000);  // 5000 "not ready" polls, 30 ms
  t.call(kEventQuery);                           // the ready one
  const auto m = t.model();
  const auto& s = cause(m, ImplicitCause::PollLoop);
  EXPECT_EQ(s.total.calls, 5000u);
  EXPECT_EQ(s.records, 1u);
  const auto x = analyzer::compute_metrics(m);
  EXPECT_EQ(x.implicit_sync_share, 0.0);
  EXPECT_EQ(x.implicit_sync_calls, 5000u);
  // The explicit finding holds the polls' time; the implicit one names the
  // loop (repeated) with no share of its own: no second counted twice.
  const auto a = analyzer::analyze(m, x);
  const analyzer::Finding* f = implicit_finding(a);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, analyzer::Status::Warn);
  EXPECT_EQ(f->share, 0.0);
  EXPECT_NEAR(x.feeder_share[static_cast<size_t>(analyzer::CallKind::Sync)], 0.30, 0.001);
}

// kImplicitCallsWarn: 99 cheap frees are no finding, 100 are a warning.
TEST(ImplicitSyncRule, RepetitionWarnsFromOneHundredCalls) {
  for (const uint64_t n : {analyzer::kImplicitCallsWarn - 1, analyzer::kImplicitCallsWarn}) {
    TraceBuilder t;
    t.copy(kMemcpy, false, fb::MemoryKind::Pageable);  // some GPU work: a process with none gets no findings
    for (uint64_t i = 0; i < n; ++i) t.call(kFree, 0, 1'000);
    const auto a = analysis_of(t.model());
    const analyzer::Finding* f = implicit_finding(a);
    if (n < analyzer::kImplicitCallsWarn) {
      EXPECT_EQ(f, nullptr) << n;
      continue;
    }
    ASSERT_NE(f, nullptr) << n;
    EXPECT_EQ(f->severity, analyzer::Status::Warn);
    EXPECT_NE(f->evidence.front().find("100 calls"), std::string::npos) << f->evidence.front();
    EXPECT_NE(f->fix.find("cudaMallocAsync"), std::string::npos);
  }
}

// kFailShare / kWarnShare on the feeding thread's blocked time: a few long
// memsets of pinned memory (below the repetition bar) at 9, 11 and 26 % of
// the wall time.
TEST(ImplicitSyncRule, TheShareDecidesTheSeverityAtTenAndTwentyFivePercent) {
  struct Case {
    uint64_t ms;
    bool found;
    analyzer::Status severity;
  };
  for (const Case c : {Case{9, false, analyzer::Status::Pass}, Case{11, true, analyzer::Status::Warn},
                       Case{26, true, analyzer::Status::Fail}}) {
    TraceBuilder t;
    t.memset(kMemset, fb::MemoryKind::Pinned, c.ms * kMs);
    const auto a = judged_analysis_of(t.model());
    const analyzer::Finding* f = implicit_finding(a);
    ASSERT_EQ(f != nullptr, c.found) << c.ms;
    if (!f) continue;
    EXPECT_EQ(f->severity, c.severity) << c.ms;
    EXPECT_NEAR(f->share, c.ms / 100.0, 0.001);
    EXPECT_EQ(f->cls, analyzer::Bottleneck::SyncBound);
    ASSERT_EQ(f->sites.size(), 1u);
    EXPECT_EQ(f->sites[0].function, "cudaMemset");
    EXPECT_EQ(f->sites[0].stack_id, 4u);
  }
}

}  // namespace
}  // namespace gpuscope::test
