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
  x.gpu_work_done = true;
  x.judged_s = 10;  // long enough to judge
  x.allocs = x.frees = kMinAllocCallsForRate;
  x.launches = x.syncs = kMinWorkCalls;  // enough operations to judge
  x.exit_status = 0;
  return x;
}

void set_share(Metrics& x, CallKind kind, double share) {
  x.feeder_share[static_cast<size_t>(kind)] = share;
  double inside = 0;
  for (double s : x.feeder_share) inside += s;
  x.feeder_outside_cuda_share = std::max(0.0, 1.0 - inside);
  if (kind == CallKind::Copy) x.feeder_pcie_copy_share = share;  // host<->device copies, as metrics split them
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

// A process sharing its GPU: NVML sees the GPU `whole` busy, the driver's
// samples put `others` of that on other processes (metrics scale gpu_util
// to this process's part, as compute_metrics does).
Metrics shared(double sync_share, double whole, double others) {
  Metrics x = sync(sync_share, whole * (1 - others), 1.0);
  x.nvml_gpu_util = whole;
  x.other_processes_share = others;
  x.busiest_other_process = "pid 7 (batch_embed)";
  x.other_processes = 1;
  return x;
}

TEST(SharedGpuRule, WaitsForAGpuOthersHoldArePutOnThem) {
  const char* id = "sync.waits_for_other_processes";
  const char* own = "sync.host_blocked_in_synchronization";
  // All of a 60 % wait on a GPU another process keeps 75 % busy: theirs, and the verdict's.
  const Metrics all_theirs = shared(0.6, 0.75, 1.0);
  EXPECT_EQ(severity(all_theirs, id), Status::Fail);
  EXPECT_EQ(severity(all_theirs, own), std::nullopt);
  const Analysis a = analyze(TraceModel{}, all_theirs);
  EXPECT_EQ(a.verdict.cls, Bottleneck::SyncBound);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].id, id);
  EXPECT_NE(a.findings[0].title.find("pid 7 (batch_embed) held 100% of the GPU's busy time"), std::string::npos)
      << a.findings[0].title;
  EXPECT_NE(a.findings[0].fix.find("MIG instance"), std::string::npos);
  // Half theirs: 30 % each way, both fail; the split is proportional.
  const Metrics half = shared(0.6, 0.75, 0.5);
  EXPECT_EQ(severity(half, id), Status::Fail);
  EXPECT_EQ(severity(half, own), Status::Fail);
  // At the bars: their part of the wait at kWarnShare warns, just under it is no finding.
  EXPECT_EQ(severity(shared(kWarnShare / 0.5, 0.75, 0.5), id), Status::Warn);
  EXPECT_EQ(severity(shared(kWarnShare / 0.5 - kJustBelow, 0.75, 0.5), id), std::nullopt);
}

// A GPU-bound loop whose launches block on the full queue of a GPU it gets
// 60 % of: 90 % in launches x 40 % theirs. Alone, the same loop is healthy.
TEST(SharedGpuRule, LaunchesAFullSharedQueueBlocksArePutOnTheOthers) {
  Metrics x = shared(0.0, 0.99, 0.4);
  set_share(x, CallKind::Launch, 0.9);
  x.gpu_util_during_launches = 0.99;
  const Analysis a = analyze(TraceModel{}, x);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].id, "sync.waits_for_other_processes");
  EXPECT_NEAR(a.findings[0].share, 0.36, 1e-9);
  EXPECT_EQ(a.verdict.cls, Bottleneck::SyncBound);
  EXPECT_EQ(severity(x, "cpu.launch_bound"), std::nullopt);  // pushed back, not launch overhead
  x.other_processes_share.reset();
  x.gpu_util = 0.99;
  EXPECT_EQ(verdict(x), Bottleneck::Healthy);
}

TEST(SharedGpuRule, AnIdleGpuOrFewOthersOrNoSamplesLeaveTheSyncFinding) {
  const char* id = "sync.waits_for_other_processes";
  const char* own = "sync.host_blocked_in_synchronization";
  // The GPU under kGpuBusy by NVML: the others did not hold it; the wait is this process's.
  const Metrics idle = shared(0.6, kGpuBusy - kJustBelow, 1.0);
  EXPECT_EQ(severity(idle, id), std::nullopt);
  EXPECT_EQ(severity(idle, own), Status::Fail);
  // Others at kOtherProcessesShare of the busy time: a tenth of a wait that is all the run warns.
  EXPECT_EQ(severity(shared(1.0, 0.75, kOtherProcessesShare), id), Status::Warn);
  EXPECT_EQ(severity(shared(0.6, 0.75, kOtherProcessesShare), id), std::nullopt);
  // No per-process samples naming this process.
  Metrics unknown = shared(0.6, 0.75, 1.0);
  unknown.other_processes_share.reset();
  EXPECT_EQ(severity(unknown, id), std::nullopt);
  EXPECT_EQ(severity(unknown, own), Status::Fail);
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
  oom.oom_errors = 1;  // no churn: "allocate once and reuse" is no answer to a GPU too small
  EXPECT_EQ(severity(oom, id), std::nullopt);
  EXPECT_EQ(severity(oom, "memory.out_of_memory"), Status::Warn);
  Metrics churn_and_oom = churn(kAllocFailShare, 10);
  churn_and_oom.oom_errors = 1;  // churn that also ran out: one finding, the error in its evidence
  EXPECT_EQ(severity(churn_and_oom, id), Status::Fail);
  EXPECT_EQ(severity(churn_and_oom, "memory.out_of_memory"), std::nullopt);
  EXPECT_EQ(verdict(churn(0.5, 5000)), Bottleneck::MemoryBound);
}

// The virtual memory API's allocations (PyTorch's expandable segments) are
// named as such, and a cudaFree that never happened is not blamed.
TEST(AllocatorRule, PhysicalAllocationsAreNamedAndCudaFreeIsNotBlamed) {
  const auto evidence = [](const Metrics& x) {
    const TraceModel model;
    const Analysis a = analyze(model, x);
    const Finding* f = find(a, "memory.allocator_churn");
    std::string all;
    for (const std::string& e : f ? f->evidence : std::vector<std::string>{}) all += e + "\n";
    return all + (f ? f->fix : "");
  };
  Metrics x = churn(0.5, 5000);
  x.allocs = x.frees = 1000;
  EXPECT_NE(evidence(x).find("cudaFree synchronizes the device"), std::string::npos);
  EXPECT_EQ(evidence(x).find("virtual memory API"), std::string::npos);
  x.physical_allocs = x.physical_frees = 999;  // and one cudaMalloc'd buffer
  const std::string said = evidence(x);
  EXPECT_NE(said.find("999 allocations and 999 frees were physical memory of CUDA's virtual memory API"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("cudaFree synchronizes the device"), std::string::npos) << said;
  EXPECT_NE(said.find("expandable segments, stop giving mapped memory back"), std::string::npos) << said;
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
  // The bar is DRAM bandwidth while the GPU is busy: NVML's run average
  // divided by the busy share (it averages over idle time too).
  EXPECT_EQ(severity(dram(kDramBusy * 0.9, 0.9, kFusionShare), id), Status::Fail);
  EXPECT_EQ(severity(dram((kDramBusy - kJustBelow) * 0.9, 0.9, kFusionShare), id), std::nullopt);
  EXPECT_EQ(severity(dram(0.9, kGpuBusy - kJustBelow, kFusionShare), id), std::nullopt);
  // The H200's figures (docs/gpu-validation.md, run 2): three chained STREAM
  // kernels at 48 % DRAM over a run 78 % busy are memory-bound; their fused
  // form, 27 % over 57 % busy, is not judged (the GPU is not busy enough).
  EXPECT_EQ(verdict(dram(0.48, 0.78, 0.67)), Bottleneck::MemoryBound);
  EXPECT_EQ(severity(dram(0.27, 0.57, 0.0), id), std::nullopt);
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

// A host range that held the GPU idle names the stage; when its thread was
// in CUDA calls for most of that time (its whole time outside CUDA cannot
// cover the held idle), the stage waited on CUDA, not on the CPU.
Metrics held_by_range(double outside_cuda_share) {
  Metrics x = base_metrics();
  x.gpu_util = 0.1;
  x.device_timestamps = true;
  x.gpu_idle_s = 9;
  x.idle_under_ranges.push_back(RangeIdleCover{"aten::conv2d", "pytorch.cpu_op", 10, 8.0, 8.0 / 9, false});
  set_share(x, CallKind::Free, (1.0 - outside_cuda_share) * 0.6);
  set_share(x, CallKind::Other, (1.0 - outside_cuda_share) * 0.4);
  return x;
}

TEST(CpuRule, AStageBlockedInCudaCallsIsAWarningThatNamesThem) {
  const char* id = "cpu.gpu_starved_by_host";
  EXPECT_EQ(severity(held_by_range(0.8), id), Status::Fail) << "8 s outside CUDA: the stage may have computed";
  // 4 s outside CUDA in the whole run: at least half of the 8 s held was in CUDA calls.
  EXPECT_EQ(severity(held_by_range(0.4), id), Status::Warn);
  EXPECT_EQ(severity(held_by_range(0.4 + kJustBelow), id), Status::Fail);
  const Metrics blocked = held_by_range(0.1);
  const TraceModel model;
  const Analysis a = analyze(model, blocked);
  const Finding* f = find(a, id);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("in CUDA calls"), std::string::npos) << f->title;
  EXPECT_NE(f->fix.find("freeing"), std::string::npos) << f->fix;
  EXPECT_NE(a.verdict.cls, Bottleneck::CpuBound);
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

// GPU busy over the launches' span decides, not over the run: setup and
// verification around a back-pressured loop idle the GPU but are not launches.
TEST(LaunchRule, BusyWhileTheLaunchesWereIssuedDecides) {
  const char* id = "cpu.launch_bound";
  Metrics pushed_back = launches(0.9, 0.3);
  pushed_back.gpu_util_during_launches = kGpuBusy;
  EXPECT_EQ(severity(pushed_back, id), std::nullopt);
  Metrics idle_between = launches(0.9, 0.7);
  idle_between.gpu_util_during_launches = kGpuBusy - kJustBelow;
  EXPECT_EQ(severity(idle_between, id), Status::Fail);
}

// CUPTI's kernel tracing makes each launch slower (kTracedLaunchCostUs):
// with device records in the trace, a launch share that only that cost
// lifts over the bar is a warning, and the evidence says how much it is.
TEST(LaunchRule, TracingCostIsDiscountedWhenKernelsWereTraced) {
  const char* id = "cpu.launch_bound";
  const double traced_share = 100000 * kTracedLaunchCostUs / 1e6 / 10;  // launches() over 10 s
  Metrics lifted = launches(kLaunchShareFail + traced_share / 2, 0.3);
  EXPECT_EQ(severity(lifted, id), Status::Fail) << "host timing only: nothing to discount";
  lifted.device_timestamps = true;
  EXPECT_EQ(severity(lifted, id), Status::Warn);
  Metrics clear = launches(kLaunchShareFail + traced_share * 1.5, 0.3);
  clear.device_timestamps = true;
  EXPECT_EQ(severity(clear, id), Status::Fail);
  const TraceModel model;
  const Analysis a = analyze(model, clear);
  const Finding* f = find(a, id);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(std::any_of(f->evidence.begin(), f->evidence.end(),
                          [](const std::string& e) { return e.find("device tracing (CUPTI)") != std::string::npos; }));
}

// Launches of milliseconds did work inside the call (JIT, module loading,
// a replaying profiler): not launch overhead, whatever their share.
TEST(LaunchRule, SlowLaunchesAreAWarningNotLaunchBound) {
  const char* id = "cpu.launch_bound";
  Metrics x = launches(0.5, 0.1);
  x.launches = 1000;
  TraceModel model;
  model.host_by_kind[static_cast<size_t>(CallKind::Launch)].ns = 1000 * 5'000'000ull;  // 5 ms each
  Analysis a = analyze(model, x);
  const Finding* f = find(a, id);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Status::Warn);
  EXPECT_NE(f->title.find("slow"), std::string::npos) << f->title;
  model.host_by_kind[static_cast<size_t>(CallKind::Launch)].ns =
      static_cast<uint64_t>(1000 * (kSlowLaunchUs - 1) * 1e3);  // just under the bar: overhead
  a = analyze(model, x);
  f = find(a, id);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Status::Fail);
}

Metrics fallback() {
  Metrics x = base_metrics();
  x.gpu_samples = 0;
  x.successful_launches = 0;
  x.successful_copies = 0;
  x.gpu_work_done = false;
  x.process_cpu_cores = 1.0;
  x.feeder_cpu_util = 1.0;
  x.no_gpu_errors.push_back(CudaError{"cudaGetDeviceCount", 35, "cudaErrorInsufficientDriver", 1});
  x.errors = x.failures = x.no_gpu_errors;
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
  EXPECT_EQ(find(a, "cpu.gpu_starved_by_host"), nullptr);  // no GPU work: no GPU to starve
  Metrics worked = x;
  worked.gpu_work_done = true;
  EXPECT_EQ(severity(worked, "fallback.cpu_fallback"), std::nullopt);
}

TEST(FallbackRule, EveryFailingCallIsCitedByNameCodeAndErrorName) {
  Metrics x = fallback();
  x.no_gpu_errors.clear();  // 801 is not on the "no GPU" list, and still the evidence
  x.failures = x.errors = {CudaError{"cudaGetDeviceCount", 801, "cudaErrorNotSupported", 1},
                           CudaError{"cudaMalloc", 999, "cudaErrorUnknown", 2}};
  const TraceModel model;
  const Analysis a = analyze(model, x);
  ASSERT_EQ(a.verdict.cls, Bottleneck::CpuFallback);
  const Finding* f = find(a, "fallback.cpu_fallback");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence[0], "cudaGetDeviceCount returned cudaErrorNotSupported (801), 1 time(s)");
  EXPECT_EQ(f->evidence[1], "cudaMalloc returned cudaErrorUnknown (999), 2 time(s)");
}

TEST(FallbackRule, HiddenDevicesAreEvidenceForAProcessThatTouchedCuda) {
  Metrics x = fallback();
  x.failures.clear();
  x.no_gpu_errors.clear();
  EXPECT_EQ(severity(x, "fallback.cpu_fallback"), std::nullopt);  // attempted, nothing failed: no claim
  EXPECT_EQ(verdict(x), Bottleneck::NoCudaWork);
  x.devices_hidden = true;
  x.visible_devices = "";
  const TraceModel model;
  const Analysis a = analyze(model, x);
  ASSERT_NE(find(a, "fallback.cpu_fallback"), nullptr);
  EXPECT_NE(find(a, "fallback.cpu_fallback")->fix.find("CUDA_VISIBLE_DEVICES"), std::string::npos);
  x.cuda_attempted = false;  // `env` under CUDA_VISIBLE_DEVICES='': nothing wanted a GPU
  EXPECT_EQ(verdict(x), Bottleneck::NoCudaWork);
}

TEST(FallbackRule, MissingDeviceNodesOrDriverAloneAreNotAFallback) {
  Metrics x = fallback();
  x.failures.clear();
  x.no_gpu_errors.clear();
  x.missing_nodes = {"/dev/nvidia0 (missing)", "/dev/nvidiactl (missing)"};
  x.driver_problem = "libcuda.so.1: cannot open shared object file";
  EXPECT_EQ(severity(x, "fallback.cpu_fallback"), std::nullopt);
  EXPECT_EQ(verdict(x), Bottleneck::NoCudaWork);
}

TEST(FallbackRule, NoCudaWorkIsNotAFallbackWhateverTheCpuDid) {
  Metrics x = fallback();
  x.failures.clear();
  x.no_gpu_errors.clear();
  x.cuda_attempted = false;
  x.process_cpu_cores = 1.0;  // `ls`, a shell, a pure-Python helper: busy, and no GPU in sight
  const TraceModel model;
  const Analysis a = analyze(model, x);
  EXPECT_EQ(a.verdict.cls, Bottleneck::NoCudaWork);
  EXPECT_TRUE(a.findings.empty());
  EXPECT_FALSE(is_cuda_verdict(a.verdict.cls));
  EXPECT_EQ(a.verdict.headline, "no CUDA work: no GPU library loaded and no CUDA call made");
}

TEST(FallbackRule, LoudIsNotSilent) {
  Metrics x = fallback();
  x.exit_status = 1;  // torch.zeros(1, device="cuda") raised, the program died
  const TraceModel model;
  Analysis a = analyze(model, x);
  EXPECT_EQ(a.verdict.cls, Bottleneck::CudaUnavailable);
  const Finding* f = find(a, "fallback.cuda_unavailable_program_failed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "CUDA unavailable; the program failed (exit status 1)");
  EXPECT_EQ(a.verdict.headline, "CUDA unavailable; the program failed (exit status 1), confidence high");
  EXPECT_EQ(f->fix.find("falling back silently"), std::string::npos) << f->fix;
  x.exit_status.reset();  // still running when the capture ended (attach): it carried on
  EXPECT_EQ(verdict(x), Bottleneck::CpuFallback);
  x.exit_status = 0;
  a = analyze(model, x);
  EXPECT_EQ(a.verdict.cls, Bottleneck::CpuFallback);
  EXPECT_EQ(a.verdict.headline,
            "silent CPU fallback: CUDA unavailable; the program carried on on the CPU and exited 0, confidence high");
}

// The first allocation asked for more than the GPU has: CUDA worked and
// said no. "CUDA unavailable" would send the user to a driver that is fine.
Metrics refused(const CudaError& e) {
  Metrics x = fallback();
  x.no_gpu_errors.clear();
  x.errors = x.failures = x.program_errors = {e};
  x.exit_status = 1;
  return x;
}

TEST(FallbackRule, ARequestAWorkingCudaRefusedIsTheProgramsError) {
  Metrics x = refused(CudaError{"cudaMalloc", 2, "cudaErrorMemoryAllocation", 1});
  x.cuda_answered = "cudaGetDeviceCount succeeded";
  x.missing_nodes = {"/dev/nvidia0 (missing)"};  // cannot explain an answer from the GPU
  const TraceModel model;
  Analysis a = analyze(model, x);
  EXPECT_EQ(a.verdict.cls, Bottleneck::CudaError);
  EXPECT_EQ(a.verdict.confidence, "high");
  EXPECT_STREQ(bottleneck_id(a.verdict.cls), "cuda_error");
  EXPECT_TRUE(is_cuda_verdict(a.verdict.cls));
  const Finding* f = find(a, "cuda.program_failed_on_error");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "failed on a CUDA error (exit status 1): cudaMalloc returned cudaErrorMemoryAllocation (2)");
  EXPECT_EQ(a.verdict.headline, f->title + ", confidence high");  // what failed, not "100% of wall time"
  EXPECT_EQ(f->evidence[1], "CUDA found the GPU: cudaGetDeviceCount succeeded");
  EXPECT_NE(f->fix.find("ran out of memory"), std::string::npos) << f->fix;
  for (const std::string& e : f->evidence) EXPECT_EQ(e.find("/dev/nvidia"), std::string::npos) << e;
  EXPECT_EQ(f->fix.find("driver"), std::string::npos) << f->fix;
  EXPECT_EQ(find(a, "fallback.cuda_unavailable_program_failed"), nullptr);
  x.exit_status = 0;  // caught it and computed on the CPU: silent, but not "CUDA unavailable"
  a = analyze(model, x);
  EXPECT_EQ(a.verdict.cls, Bottleneck::CpuFallback);
  ASSERT_NE(find(a, "fallback.cpu_fallback"), nullptr);
  EXPECT_EQ(find(a, "fallback.cpu_fallback")->title.find("CUDA unavailable"), std::string::npos);
  EXPECT_NE(find(a, "fallback.cpu_fallback")->fix.find("fail at start"), std::string::npos);
}

TEST(FallbackRule, AnyErrorThatMeansNoGpuMakesItUnavailable) {
  Metrics x = refused(CudaError{"cudaMalloc", 1, "cudaErrorInvalidValue", 1});
  EXPECT_EQ(verdict(x), Bottleneck::CudaError);
  x.failures.push_back(CudaError{"cudaGetDeviceCount", 100, "cudaErrorNoDevice", 1});
  EXPECT_EQ(verdict(x), Bottleneck::CudaUnavailable);
  x.failures.pop_back();
  x.failed_loads = {"libcuda.so.1: cannot open shared object file"};
  EXPECT_EQ(verdict(x), Bottleneck::CudaUnavailable);
}

TEST(FallbackRule, KernelsBuiltForAnotherGpuAreUnavailabilityWithTheBuildFix) {
  Metrics x = refused(CudaError{"cudaLaunchKernel", 209, "cudaErrorNoKernelImageForDevice", 1});
  x.program_errors.clear();
  x.wrong_build_errors = x.failures;
  const TraceModel model;
  const Analysis a = analyze(model, x);
  EXPECT_EQ(a.verdict.cls, Bottleneck::CudaUnavailable);
  EXPECT_NE(find(a, "fallback.cuda_unavailable_program_failed")->fix.find("-gencode"), std::string::npos);
}

TEST(ErrorMeaning, TheCodeAndTheCallSayWhetherTheGpuWasThere) {
  EXPECT_EQ(error_meaning("cudaMalloc", 35), ErrorMeaning::NoGpu);
  EXPECT_EQ(error_meaning("cudaMalloc", 100), ErrorMeaning::NoGpu);
  EXPECT_EQ(error_meaning("cudaMalloc", 999), ErrorMeaning::NoGpu);  // a half-set-up container's first call
  EXPECT_EQ(error_meaning("cudaGetDeviceCount", 801), ErrorMeaning::NoGpu);  // initialization that cannot
  EXPECT_EQ(error_meaning("cudaSetDevice", 101), ErrorMeaning::NoGpu);       // the GPU it asked for is not there
  EXPECT_EQ(error_meaning("__cudaLaunchKernel", 209), ErrorMeaning::WrongBuild);
  EXPECT_EQ(error_meaning("cuLaunchKernel", 222), ErrorMeaning::WrongBuild);
  EXPECT_EQ(error_meaning("cudaMalloc", 2), ErrorMeaning::ProgramError);
  EXPECT_EQ(error_meaning("__cudaLaunchKernel", 9), ErrorMeaning::ProgramError);
  EXPECT_EQ(error_meaning("cudaMallocArray", 801), ErrorMeaning::ProgramError);  // a feature, not the GPU
  EXPECT_EQ(error_meaning("cudaMemcpy", 700), ErrorMeaning::ProgramError);
  EXPECT_TRUE(is_answer_not_failure(600));
  EXPECT_TRUE(is_answer_not_failure(704));  // peer access already enabled: carry on
  EXPECT_TRUE(is_answer_not_failure(712));  // host memory already registered
  EXPECT_FALSE(is_answer_not_failure(2));
}

TEST(CopyKinds, DeviceToDeviceCopiesAreNotPcie) {
  Metrics x = base_metrics();
  x.gpu_util = 0.1;
  x.feeder_share[static_cast<size_t>(CallKind::Copy)] = 0.6;
  x.feeder_device_copy_share = 0.6;  // all of the copy time was device-to-device
  x.d2d_count = 200;
  const TraceModel model;
  const Analysis a = analyze(model, x);
  EXPECT_EQ(find(a, "pcie.host_blocked_in_copies"), nullptr);
  ASSERT_NE(find(a, "memory.device_copies"), nullptr);
  EXPECT_EQ(find(a, "memory.device_copies")->severity, Status::Fail);
  EXPECT_EQ(a.verdict.cls, Bottleneck::MemoryBound);
  EXPECT_EQ(severity(x, "memory.device_copies"), Status::Fail);
  x.feeder_device_copy_share = kWarnShare - kJustBelow;
  EXPECT_EQ(severity(x, "memory.device_copies"), std::nullopt);
}

TEST(ShortRuns, BelowTheFloorTheAnswerIsTooShortToJudge) {
  Metrics x = sync(0.6, 0.3, 1.0);
  x.judged_s = kMinJudgedSeconds - kJustBelow;
  x.wall_s = x.judged_s + 0.1;
  x.init_s = 0.1;
  const TraceModel model;
  const Analysis a = analyze(model, x);
  EXPECT_EQ(a.verdict.cls, Bottleneck::TooShort);
  EXPECT_NE(a.verdict.headline.find("it looked sync-bound"), std::string::npos) << a.verdict.headline;
  ASSERT_FALSE(a.findings.empty());  // what was seen stays in the report, as hints
  for (const Finding& f : a.findings)
    EXPECT_NE(f.severity, Status::Fail) << f.id << ": a failure with a fix to act on, under a hedged verdict";
  ASSERT_NE(find(a, "sync.host_blocked_in_synchronization"), nullptr);
  EXPECT_NE(find(a, "sync.host_blocked_in_synchronization")->evidence.back().find("unconfirmed: "), std::string::npos);
  for (const Check& c : a.checks) EXPECT_NE(c.status, Status::Fail) << c.name;
  const Analysis judged = analyze(model, [&] {
    Metrics longer = x;
    longer.judged_s = kMinJudgedSeconds;
    return longer;
  }());
  ASSERT_NE(find(judged, "sync.host_blocked_in_synchronization"), nullptr);
  EXPECT_EQ(find(judged, "sync.host_blocked_in_synchronization")->severity, Status::Fail);
  x.judged_s = kMinJudgedSeconds;
  EXPECT_EQ(verdict(x), Bottleneck::SyncBound);
  x.launches = 5;  // long enough, but a handful of operations: still not evidence
  x.syncs = kMinWorkCalls - 6;
  EXPECT_EQ(verdict(x), Bottleneck::TooShort);
  x.syncs = kMinWorkCalls - 5;
  EXPECT_EQ(verdict(x), Bottleneck::SyncBound);
  Metrics failed = fallback();  // direct evidence needs no time
  failed.judged_s = 0.001;
  EXPECT_EQ(verdict(failed), Bottleneck::CpuFallback);
}

TEST(ShortRuns, AFewAllocationsAreNotChurn) {
  Metrics x = churn(0.5, 5000);
  x.allocs = 2;
  x.frees = kMinAllocCallsForRate - 3;
  EXPECT_EQ(severity(x, "memory.allocator_churn"), std::nullopt);
  x.frees = kMinAllocCallsForRate - 2;
  EXPECT_EQ(severity(x, "memory.allocator_churn"), Status::Fail);
}

TEST(HostInference, OneWaitAtTheEndOfQueuedWorkIsABusyGpuNotASyncStall) {
  Metrics x = sync(0.9, std::nullopt, 0.005);
  x.wait_on_kernels_share = 0.88;
  x.waits_on_queued = 1;
  x.queued_ops = 200;
  x.sparse_waits = true;
  x.gpu_util = 0.88;  // as metrics infer it without NVML: the waits on queued work
  x.gpu_busy_source = "host";
  EXPECT_EQ(severity(x, "sync.host_blocked_in_synchronization"), std::nullopt);
  EXPECT_EQ(verdict(x), Bottleneck::Healthy);
  x.sparse_waits = false;  // a wait after every launch: the round trips are the stall
  x.gpu_util = 0.3;
  EXPECT_EQ(verdict(x), Bottleneck::SyncBound);
}

// .item() every step: 2.5 ms of host work, 3 ms of queued kernels, one
// wait. The waits are sparse (the GPU's time), but the GPU idled after each
// through the next step's host work: that idle is the waits' stall, not the
// host's, and no second of it counts for both findings.
Metrics item_per_step() {
  Metrics x = sync(0.49, 0.54, 0.03);
  x.wait_on_kernels_share = 0.49;
  x.waits_on_queued = 60;
  x.queued_ops = 1860;
  x.sparse_waits = true;
  x.gpu_busy_source = "device";
  x.feeder_cpu_util = 0.95;
  x.process_cpu_cores = 1.0;
  x.drained_waits = 59;
  x.drain_share = 0.45;
  set_share(x, CallKind::Launch, 0.04);
  set_share(x, CallKind::Sync, 0.49);  // outside CUDA: 47 %
  return x;
}

TEST(SyncRule, WaitsThatEmptyTheQueueStallForTheIdleAfterThem) {
  Metrics x = item_per_step();
  EXPECT_EQ(severity(x, "sync.host_blocked_in_synchronization"), Status::Fail);
  EXPECT_EQ(severity(x, "cpu.gpu_starved_by_host"), std::nullopt) << "the idle is the waits'";
  EXPECT_EQ(verdict(x), Bottleneck::SyncBound);
  const Analysis a = analyze(TraceModel{}, x);
  const Finding* f = find(a, "sync.host_blocked_in_synchronization");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->share, 0.45, 1e-9);
  EXPECT_TRUE(f->fix.starts_with("queue the next step's work before waiting")) << f->fix;
  // Without device timestamps nothing is drained: the sparse waits are a busy GPU's.
  x.drain_share = 0;
  x.drained_waits = 0;
  EXPECT_EQ(severity(x, "sync.host_blocked_in_synchronization"), std::nullopt);
}

TEST(SyncRule, WaitsBesideASlowerHostAreAWarningBesideTheHostsFinding) {
  // 40 ms of host work a step over 9 ms of kernels: overlapping would save
  // the 9 ms (17 %); the rest of the GPU's idle is the host's.
  Metrics x = item_per_step();
  x.gpu_util = 0.18;
  x.wait_on_kernels_share = 0.18;
  x.drain_share = 0.17;
  set_share(x, CallKind::Launch, 0.01);
  set_share(x, CallKind::Sync, 0.18);
  EXPECT_EQ(severity(x, "sync.host_blocked_in_synchronization"), Status::Warn);
  EXPECT_EQ(severity(x, "cpu.gpu_starved_by_host"), Status::Fail);
  EXPECT_EQ(verdict(x), Bottleneck::CpuBound);
}

TEST(ErrorNames, AnyCodeOfTheToolkitIsNamedInTheCallersApi) {
  EXPECT_EQ(cuda_error_name(801, false), "cudaErrorNotSupported");
  EXPECT_EQ(cuda_error_name(801, true), "CUDA_ERROR_NOT_SUPPORTED");
  EXPECT_EQ(cuda_error_name(35, true), "cudaErrorInsufficientDriver");  // only the runtime has 35
  EXPECT_EQ(cuda_error_name(712, false), "cudaErrorHostMemoryAlreadyRegistered");
  EXPECT_EQ(cuda_error_name(123456, false), "");
  EXPECT_TRUE(is_answer_not_failure(kNotReady));
  EXPECT_FALSE(is_answer_not_failure(801));
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
