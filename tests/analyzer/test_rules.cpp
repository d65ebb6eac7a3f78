// Every rule at, just below and just above its thresholds (docs/rules.md),
// on metrics built by hand: the rules read nothing else.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "rules.h"

namespace gpuscope::analyzer {
namespace {

constexpr double kJustBelow = 1e-4;

Metrics base_metrics() {
  Metrics x;
  x.wall_s = 10;
  x.feeder_tid = 1;
  x.host_threads_with_cuda = 1;
  x.gpu_samples = 100;
  x.online_cpus = 8;
  x.cuda_attempted = true;  // and it worked: the GPU did something
  x.successful_launches = 100;
  x.successful_copies = 100;
  return x;
}

void set_share(Metrics& x, CallKind kind, double share) {
  x.feeder_share[static_cast<size_t>(kind)] = share;
  double inside = 0;
  for (double s : x.feeder_share) inside += s;
  x.feeder_outside_cuda_share = std::max(0.0, 1.0 - inside);
}

const Finding* find(const Analysis& a, const std::string& id) {
  auto it = std::find_if(a.findings.begin(), a.findings.end(), [&](const Finding& f) { return f.id == id; });
  return it == a.findings.end() ? nullptr : &*it;
}

std::optional<Status> severity(const Metrics& x, const std::string& id) {
  const TraceModel model;
  const Analysis a = analyze(model, x);
  const Finding* f = find(a, id);
  return f ? std::optional<Status>(f->severity) : std::nullopt;
}

Bottleneck verdict(const Metrics& x) {
  const TraceModel model;
  return analyze(model, x).verdict.cls;
}

Metrics pcie(double share) {
  Metrics x = base_metrics();
  x.gpu_util = 0.2;
  set_share(x, CallKind::Copy, share);
  x.pageable_share = 1.0;
  return x;
}

TEST(PcieRule, FailsAtTheShareThresholdWithPageableCopies) {
  EXPECT_EQ(severity(pcie(kFailShare), "pcie.host_blocked_in_copies"), Status::Fail);
  EXPECT_EQ(severity(pcie(kFailShare + 0.01), "pcie.host_blocked_in_copies"), Status::Fail);
  EXPECT_EQ(severity(pcie(kFailShare - kJustBelow), "pcie.host_blocked_in_copies"), Status::Warn);
  EXPECT_EQ(severity(pcie(kWarnShare), "pcie.host_blocked_in_copies"), Status::Warn);
  EXPECT_EQ(severity(pcie(kWarnShare - kJustBelow), "pcie.host_blocked_in_copies"), std::nullopt);
  EXPECT_EQ(verdict(pcie(0.6)), Bottleneck::PcieBound);
}

TEST(PcieRule, EfficientCopiesAreVolumeNotAPcieProblem) {
  Metrics x = pcie(0.6);
  x.pageable_share = kPageableWarn - kJustBelow;
  x.small_copy_share = kSmallCopyWarn - kJustBelow;
  EXPECT_EQ(severity(x, "pcie.host_blocked_in_copies"), Status::Warn);
  x.achieved_gbps = 60 * kLinkEfficiencyWarn - 0.01;  // a slow link use is a problem again
  x.link_gbps = 60;
  EXPECT_EQ(severity(x, "pcie.host_blocked_in_copies"), Status::Fail);
  x.achieved_gbps = 60 * kLinkEfficiencyWarn;
  EXPECT_EQ(severity(x, "pcie.host_blocked_in_copies"), Status::Warn);
  x = pcie(0.6);
  x.pageable_share = 0;
  x.small_copy_share = kSmallCopyWarn;  // per-request copies
  EXPECT_EQ(severity(x, "pcie.host_blocked_in_copies"), Status::Fail);
}

TEST(PcieRule, ALinkBelowItsMaximumIsATopologyFinding) {
  Metrics x = pcie(0.3);
  x.link_gbps = pcie_gbps(3, 8);
  x.link_max_gbps = pcie_gbps(5, 16);
  EXPECT_EQ(severity(x, "topology.pcie_link_degraded"), Status::Fail);
  x.link_gbps = x.link_max_gbps;
  EXPECT_EQ(severity(x, "topology.pcie_link_degraded"), std::nullopt);
  EXPECT_NEAR(pcie_gbps(5, 16), 63.0, 0.1);
  EXPECT_NEAR(pcie_gbps(3, 8), 7.88, 0.01);
  EXPECT_EQ(pcie_gbps(0, 16), 0);
}

Metrics sync(double share, std::optional<double> gpu_util, double syncs_per_launch) {
  Metrics x = base_metrics();
  x.gpu_util = gpu_util;
  set_share(x, CallKind::Sync, share);
  x.syncs_per_launch = syncs_per_launch;
  return x;
}

TEST(SyncRule, HostBlockedInSyncWhileTheGpuIdles) {
  const char* id = "sync.host_blocked_in_synchronization";
  EXPECT_EQ(severity(sync(kFailShare, 0.3, 1.0), id), Status::Fail);
  EXPECT_EQ(severity(sync(kFailShare - kJustBelow, 0.3, 1.0), id), Status::Warn);
  EXPECT_EQ(severity(sync(kWarnShare - kJustBelow, 0.3, 1.0), id), std::nullopt);
  EXPECT_EQ(severity(sync(0.9, std::nullopt, 1.0), id), Status::Fail);  // host-only: still a verdict
  EXPECT_EQ(verdict(sync(0.6, 0.3, 1.0)), Bottleneck::SyncBound);
}

TEST(SyncRule, WaitingForABusyGpuIsNotAStall) {
  const char* id = "sync.host_blocked_in_synchronization";
  // One long wait at the end of GPU-bound work: healthy.
  EXPECT_EQ(severity(sync(0.9, kGpuBusy, kSyncsPerLaunchWarn - kJustBelow), id), std::nullopt);
  EXPECT_EQ(verdict(sync(0.9, kGpuBusy, 0.001)), Bottleneck::Healthy);
  // Busy GPU but a sync after most launches: only a warning.
  EXPECT_EQ(severity(sync(0.9, kGpuBusy, kSyncsPerLaunchWarn), id), Status::Warn);
  EXPECT_EQ(severity(sync(0.9, kGpuBusy - kJustBelow, 0.001), id), Status::Fail);
}

Metrics churn(double share, double rate) {
  Metrics x = base_metrics();
  x.gpu_util = 0.3;
  set_share(x, CallKind::Alloc, share / 2);
  set_share(x, CallKind::Free, share / 2);
  x.alloc_free_share = share;
  x.alloc_rate_per_s = rate;
  return x;
}

TEST(AllocatorRule, ChurnByTimeShareOrRate) {
  const char* id = "memory.allocator_churn";
  EXPECT_EQ(severity(churn(kAllocFailShare, 10), id), Status::Fail);
  EXPECT_EQ(severity(churn(kAllocFailShare - kJustBelow, 10), id), Status::Warn);
  EXPECT_EQ(severity(churn(kAllocWarnShare, 10), id), Status::Warn);
  EXPECT_EQ(severity(churn(kAllocWarnShare - kJustBelow, kAllocWarnRate - 1), id), std::nullopt);
  EXPECT_EQ(severity(churn(kAllocWarnShare - kJustBelow, kAllocWarnRate), id), Status::Warn);
  Metrics oom = churn(0, 0);
  oom.oom_errors = 1;
  EXPECT_EQ(severity(oom, id), Status::Warn);
  EXPECT_EQ(verdict(churn(0.5, 5000)), Bottleneck::MemoryBound);
}

Metrics dram(double dram_util, double gpu_util, double fusion) {
  Metrics x = base_metrics();
  x.dram_util = dram_util;
  x.gpu_util = gpu_util;
  x.sm_util = 0.8;  // SMs "active" while stalled on memory: not a discriminator
  x.fusion_share = fusion;
  return x;
}

TEST(DramRule, MemoryBoundKernelsWithRedundantTraffic) {
  const char* id = "memory.dram_bound_kernels";
  EXPECT_EQ(severity(dram(kDramBusy, kGpuBusy, kFusionShare), id), Status::Fail);
  EXPECT_EQ(severity(dram(kDramBusy - kJustBelow, 0.9, kFusionShare), id), std::nullopt);
  EXPECT_EQ(severity(dram(0.9, kGpuBusy - kJustBelow, kFusionShare), id), std::nullopt);
  // At the roofline without chains to fuse: a note, and the GPU is healthy.
  EXPECT_EQ(severity(dram(0.9, 0.9, kFusionShare - kJustBelow), id), Status::Warn);
  EXPECT_EQ(verdict(dram(0.9, 0.9, 0.0)), Bottleneck::Healthy);
  EXPECT_EQ(verdict(dram(0.9, 0.9, 0.67)), Bottleneck::MemoryBound);
}

Metrics starved(double gpu_util, double feeder_cpu, double outside) {
  Metrics x = base_metrics();
  x.gpu_util = gpu_util;
  x.feeder_cpu_util = feeder_cpu;
  x.process_cpu_cores = 1.0;
  set_share(x, CallKind::Copy, 1.0 - outside);
  return x;
}

TEST(CpuRule, GpuIdleWhileTheFeedingThreadComputes) {
  const char* id = "cpu.gpu_starved_by_host";
  EXPECT_EQ(severity(starved(kGpuIdle - kJustBelow, kHostBusyCpu, 0.95), id), Status::Fail);
  EXPECT_EQ(severity(starved(kGpuIdle, 1.0, 0.95), id), std::nullopt);
  EXPECT_EQ(severity(starved(0.0, kHostBusyCpu - kJustBelow, 0.95), id), std::nullopt);
  EXPECT_EQ(severity(starved(0.0, 1.0, kFailShare), id), Status::Fail);
  EXPECT_EQ(severity(starved(0.0, 1.0, kFailShare - kJustBelow), id), Status::Warn);
  EXPECT_EQ(verdict(starved(0.05, 0.98, 0.97)), Bottleneck::CpuBound);
}

TEST(CpuRule, HostWorkAlreadySpreadOverThreadsIsOnlyAWarning) {
  Metrics x = starved(0.0, 1.0, 0.95);
  x.feeder_cpu_share = kSerialShare - kJustBelow;
  EXPECT_EQ(severity(x, "cpu.gpu_starved_by_host"), Status::Warn);
  x.feeder_cpu_share = kSerialShare;
  EXPECT_EQ(severity(x, "cpu.gpu_starved_by_host"), Status::Fail);
}

TEST(CpuRule, AHostStageUsingEveryCoreIsOnlyAWarning) {
  Metrics x = starved(0.0, 1.0, 0.95);
  x.process_cpu_cores = kCoresUsed * x.online_cpus;
  EXPECT_EQ(severity(x, "cpu.gpu_starved_by_host"), Status::Warn);
  x.process_cpu_cores = kCoresUsed * x.online_cpus - 0.01;
  EXPECT_EQ(severity(x, "cpu.gpu_starved_by_host"), Status::Fail);
}

Metrics launches(double share, double gpu_util) {
  Metrics x = base_metrics();
  x.gpu_util = gpu_util;
  set_share(x, CallKind::Launch, share);
  x.launches = 100000;
  return x;
}

TEST(LaunchRule, LaunchBoundOnlyWhileTheGpuIsNotBusy) {
  const char* id = "cpu.launch_bound";
  EXPECT_EQ(severity(launches(kLaunchShareFail, 0.3), id), Status::Fail);
  EXPECT_EQ(severity(launches(kLaunchShareFail - kJustBelow, 0.3), id), Status::Warn);
  EXPECT_EQ(severity(launches(kWarnShare - kJustBelow, 0.3), id), std::nullopt);
  // A full launch queue blocks the call too: a busy GPU pushing back.
  EXPECT_EQ(severity(launches(0.9, kGpuBusy), id), std::nullopt);
  EXPECT_EQ(verdict(launches(0.9, kGpuBusy)), Bottleneck::Healthy);
}

Metrics fallback() {
  Metrics x = base_metrics();
  x.gpu_samples = 0;
  x.successful_launches = 0;
  x.successful_copies = 0;
  x.process_cpu_cores = 1.0;
  x.feeder_cpu_util = 1.0;
  x.no_gpu_errors.push_back(CudaError{"cudaGetDeviceCount", 35, "cudaErrorInsufficientDriver", 1});
  x.errors = x.no_gpu_errors;
  return x;
}

TEST(FallbackRule, CudaFailedAndNothingReachedTheGpu) {
  const Metrics x = fallback();
  const TraceModel model;
  const Analysis a = analyze(model, x);
  EXPECT_EQ(a.verdict.cls, Bottleneck::CpuFallback);
  EXPECT_EQ(a.verdict.confidence, "high");  // direct evidence: the error code
  const Finding* f = find(a, "fallback.cpu_fallback");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.front().find("cudaErrorInsufficientDriver (35)"), std::string::npos) << f->evidence.front();
  Metrics worked = x;
  worked.successful_launches = 1;
  EXPECT_EQ(severity(worked, "fallback.cpu_fallback"), std::nullopt);
}

TEST(FallbackRule, HiddenDevicesAndMissingDriverAreNamed) {
  Metrics x = fallback();
  x.no_gpu_errors.clear();
  EXPECT_EQ(severity(x, "fallback.cpu_fallback"), std::nullopt);  // attempted, nothing failed: no claim
  x.devices_hidden = true;
  x.visible_devices = "";
  const TraceModel model;
  const Analysis a = analyze(model, x);
  ASSERT_NE(find(a, "fallback.cpu_fallback"), nullptr);
  EXPECT_NE(find(a, "fallback.cpu_fallback")->fix.find("CUDA_VISIBLE_DEVICES"), std::string::npos);
}

TEST(FallbackRule, NeverLoadingCudaCountsOnlyWhenTheCpuWorked) {
  Metrics x = base_metrics();
  x.gpu_samples = 0;
  x.cuda_attempted = false;
  x.successful_launches = 0;
  x.successful_copies = 0;
  x.process_cpu_cores = kHostBusyCpu;
  EXPECT_EQ(severity(x, "fallback.cpu_fallback"), Status::Fail);
  x.process_cpu_cores = kHostBusyCpu - kJustBelow;
  EXPECT_EQ(severity(x, "fallback.cpu_fallback"), std::nullopt);
}

TEST(Verdict, HealthyNeedsABusyGpuAndNoFailingRule) {
  Metrics x = base_metrics();
  x.gpu_util = kGpuBusy;
  EXPECT_EQ(verdict(x), Bottleneck::Healthy);
  x.gpu_util = kGpuBusy - kJustBelow;
  EXPECT_EQ(verdict(x), Bottleneck::Inconclusive);
}

TEST(Verdict, ConfidenceFollowsTheEvidence) {
  const TraceModel model;
  Metrics x = sync(0.6, 0.2, 1.0);
  x.kernels = 1000;
  EXPECT_EQ(analyze(model, x).verdict.confidence, "medium");  // host-side + NVML
  x.device_timestamps = true;
  EXPECT_EQ(analyze(model, x).verdict.confidence, "high");
  x.dropped = 100;  // > 1 % of ~1000 events
  EXPECT_EQ(analyze(model, x).verdict.confidence, "medium");
  x.truncated = true;
  EXPECT_EQ(analyze(model, x).verdict.confidence, "low");
  x.gpu_samples = 0;
  x.gpu_util.reset();
  x.device_timestamps = false;
  x.dropped = 0;
  x.truncated = false;
  EXPECT_EQ(analyze(model, x).verdict.confidence, "low");
}

TEST(Verdict, FindingsAreRankedFailuresFirstThenByShare) {
  Metrics x = pcie(0.3);
  set_share(x, CallKind::Sync, 0.5);
  const TraceModel model;
  const Analysis a = analyze(model, x);
  ASSERT_GE(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[0].id, "sync.host_blocked_in_synchronization");
  EXPECT_EQ(a.findings[1].id, "pcie.host_blocked_in_copies");
  EXPECT_EQ(a.verdict.cls, Bottleneck::SyncBound);
  ASSERT_EQ(a.checks.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.checks[i].number, i + 1);
}

}  // namespace
}  // namespace gpuscope::analyzer
