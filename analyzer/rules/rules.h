// Rules read metrics and return findings, checks and one verdict. Every
// threshold is a named constant here, explained in docs/rules.md and pinned
// by tests at, just below and just above it. Rules never read the trace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics.h"
#include "request_latency.h"
#include "trace_model.h"

namespace gpuscope::analyzer {

// The verdict classes. The last four are not bottlenecks: a process whose
// CUDA failed and which then failed itself (loud, unlike CpuFallback), one
// too short to judge, one that did no CUDA work (nothing to judge), and one
// that failed on errors of a CUDA that worked.
enum class Bottleneck {
  PcieBound, MemoryBound, SyncBound, CpuBound, CpuFallback, Healthy, Inconclusive,
  CudaUnavailable, TooShort, NoCudaWork,
  CudaError  // nothing reached the GPU: a working CUDA refused the program's calls, and it failed
};
const char* bottleneck_label(Bottleneck b);  // "PCIe-bound", ..., "healthy: GPU-bound"
const char* bottleneck_id(Bottleneck b);     // "pcie_bound", ... (JSON)
// Whether the class is a judgement of a process that did CUDA work (every
// class but NoCudaWork): the classes Prometheus sets one of per process.
bool is_cuda_verdict(Bottleneck b);
// Whether the class says CUDA failed the process (CUDA unavailable, a silent
// CPU fallback, a CUDA error it stopped at): no share of time to weigh.
bool is_cuda_failure(Bottleneck b);

enum class Status { Pass, Warn, Fail, Unknown };
const char* status_label(Status s);  // "pass", "warn", "fail", "n/a"

// Thresholds (docs/rules.md).
inline constexpr double kFailShare = 0.25;         // a cause explaining >= 25 % of wall time is the bottleneck
inline constexpr double kWarnShare = 0.10;         // >= 10 %: worth fixing
inline constexpr double kAllocFailShare = 0.15;    // allocation is pure overhead: a lower bar
inline constexpr double kAllocWarnShare = 0.05;
inline constexpr double kAllocWarnRate = 1000;     // malloc+free per second
inline constexpr double kGpuBusy = 0.60;           // NVML utilization counted as "GPU busy"
inline constexpr double kGpuIdle = 0.40;           // ... and as "GPU mostly idle"
inline constexpr double kPageableWarn = 0.50;      // share of copied bytes from pageable memory
inline constexpr double kSmallCopyWarn = 0.50;     // share of copies under 64 KiB
inline constexpr double kLinkEfficiencyWarn = 0.25;  // achieved / link bandwidth
inline constexpr double kSyncsPerLaunchWarn = 0.25;
// GPM DRAM-bandwidth utilization (share of the theoretical peak) while the
// GPU is busy: the run's average divided by the busy share, since NVML
// averages over idle time too. Streaming kernels reach 80-90 % of peak at
// best; on an H200 (docs/gpu-validation.md, run 2) a chain of three STREAM
// kernels ran at 62 % while busy, its fused form at 47 %, a compute-bound
// kernel at 0 %.
inline constexpr double kDramBusy = 0.50;
inline constexpr double kFusionShare = 0.30;       // same-shape chain links per kernel: fusion candidates
inline constexpr double kCoresUsed = 0.75;         // host stage already parallel: uses >= 75 % of the CPUs
inline constexpr double kSerialShare = 0.70;       // ... or the feeding thread does < 70 % of the process's CPU work
inline constexpr double kHostBusyCpu = 0.50;       // a feeding thread on CPU >= half its time
inline constexpr double kRangeIdleShare = 0.40;    // a host range holding >= 40 % of the GPU's idle time names the stage
inline constexpr double kSlowLaunchUs = 200.0;  // a launch averaging this long did work inside the call
inline constexpr double kBlockedStageShare = 0.50;  // ... but when its thread sat in CUDA calls this much of it, not CPU-bound
inline constexpr double kHostCostShare = 0.20;     // CPU samples in memset, memcpy or the allocator worth naming
inline constexpr double kKernelCpuShare = 0.30;    // process CPU time in the kernel (page faults) worth naming
inline constexpr double kSerialLoopShare = 0.50;   // samples in one function of the program: a serial loop
inline constexpr double kLaunchShareFail = 0.30;   // feeding thread's time in launch calls
// What device-activity tracing adds to each kernel launch on the host:
// CUPTI's kernel records (gpuscope's, torch.profiler's and Nsight's alike)
// cost the launch itself. Measured on an H200, driver 580, CUPTI 13.0: a
// launch-bound loop of 200 000 launches, gpuscope with CUPTI against
// gpuscope with CUPTI off (docs/gpu-validation.md, run 2): 3.0 us.
inline constexpr double kTracedLaunchCostUs = 3.0;
inline constexpr double kDropWarn = 0.01;          // dropped events lower the confidence
inline constexpr double kClockSlowdownShare = 0.10;  // NVML samples with a clocks slowdown reason worth a finding
// Minimum evidence (docs/rules.md, "Short runs").
inline constexpr double kMinJudgedSeconds = 0.2;   // wall time after context initialization
inline constexpr uint64_t kMinWorkCalls = 20;      // launches, copies, memsets and synchronizations
inline constexpr uint64_t kMinAllocCallsForRate = 100;  // allocations+frees before a rate means churn
inline constexpr uint64_t kImplicitCallsWarn = 100;
// Tail latency (--requests; docs/rules.md "Requests and tail latency").
inline constexpr double kTailFailSlowdown = 3.0;  // ... and failing
inline constexpr double kTailCauseShare = 0.50;   // half the tail requests grew most in one part: its cause
inline constexpr size_t kTailSitesShown = 3;  // implicit syncs of one cause: repeated like a loop

struct CallSite {
  std::string function;
  uint32_t stack_id = 0;
  uint64_t count = 0;
  uint64_t ns = 0;
};

// A host stack the CPU samples fell in (CPU-bound findings).
struct HostStackSite {
  uint32_t stack_id = 0;
  uint64_t samples = 0;
  double share = 0;  // of the trace's samples
};

struct Finding {
  std::string id;  // stable: "pcie.host_blocked_in_copies"
  Bottleneck cls = Bottleneck::Inconclusive;
  Status severity = Status::Warn;
  double share = 0;  // of wall time it explains; ranks findings
  std::string title;
  std::vector<std::string> evidence;
  std::vector<CallSite> sites;
  std::vector<HostStackSite> host_stacks;  // CPU-bound: where the host's CPU time went, by samples
  std::string fix;
  // The NVTX range holding most of the finding's host time (innermost range
  // of each call), and that share; empty when the trace has no ranges or the
  // finding's calls ran outside all of them.
  std::string range, range_domain;
  double range_share = 0;
  // About the node (a throttled GPU), not a cause of the program's time: it
  // never decides the verdict and explains no share of wall time.
  bool node_condition = false;
};
// "label: title", or the title alone where it begins with the label
// ("CUDA unavailable; the program failed (exit status 1)").
std::string finding_heading(const Finding& f);

struct Check {
  int number = 0;
  std::string name;
  Status status = Status::Unknown;
  std::vector<std::string> lines;
};

struct Verdict {
  Bottleneck cls = Bottleneck::Inconclusive;
  double share = 0;
  std::string confidence;         // high, medium, low
  std::string confidence_reason;
  std::string headline;           // one line, for `gpuscope run`'s summary
};

struct Analysis {
  Verdict verdict;
  std::vector<Check> checks;      // the five, in diagnosis order
  std::vector<Finding> findings;  // ranked
  std::vector<std::string> coverage;
  RequestLatency requests;        // --requests: latency per request and the tail's cause
};

Analysis analyze(const TraceModel& model, const Metrics& metrics);

// Names, on each finding, the range holding most of the time of the kinds
// of call the finding is about (its call sites' kinds, else its class's).
void attribute_findings_to_ranges(const TraceModel& model, Analysis* analysis);
// What the slowest requests spent their extra time on (tail_rules.cpp):
// the part most tail requests grew most in over the median band, when they
// are half of them or more; `differs` when it is not the median's own
// largest part. Empty when there is no such cause, the tail is not slow
// enough to explain, or the evidence is thin (RequestLatency::thin_evidence).
struct TailCause {
  RequestPart part = RequestPart::OutsideCuda;  // grew most
  RequestPart median_part = RequestPart::OutsideCuda;  // the median band's largest
  double slowdown = 0;       // tail mean / median band mean
  double request_share = 0;  // of the tail requests, those that grew most in `part`
  double growth_share = 0;   // of the tail's extra time per request, in `part`
  bool differs = false;      // `part` is not the median's largest: a finding
};
std::optional<TailCause> tail_cause(const RequestLatency& r);
// What the process's other threads were doing during the tail and not
// during the median band (RequestGroup::concurrent_*): the part another
// thread was busy in during at least kTailCauseShare of the tail requests
// and at most kConcurrentBandShare of the band's, the largest such
// difference. Needs a slow tail (kTailSlowdown) and enough evidence.
struct ConcurrentCause {
  RequestPart part = RequestPart::OtherCuda;
  double tail_share = 0, band_share = 0;  // of each group's requests, another thread busy in `part`
  double overlap_ns = 0;                  // per tail request: other threads' time in `part` inside it
};
std::optional<ConcurrentCause> concurrent_cause(const RequestLatency& r);
inline constexpr double kConcurrentBandShare = 0.20;
// Another process on the same GPU (RequestLatency::co_tenants) busy for
// kCoTenantShare of at least kTailCauseShare of the tail requests and of at
// most kConcurrentBandShare of the band's: the largest such difference.
struct CoTenantCause {
  const CoTenantOverlap* tenant = nullptr;
  double tail_share = 0, band_share = 0;  // of each group's requests, the co-tenant busy during them
  double held_share = 0;                  // its busy time over the tail requests' time
};
std::optional<CoTenantCause> co_tenant_cause(const RequestLatency& r);
// "pid 4417 (batch_embed) was busy on the GPU ...": the evidence line.
std::string co_tenant_line(const RequestLatency& r, const CoTenantCause& c);
// The class a tail cause's part belongs to: copies PCIe-bound,
// synchronization sync-bound, allocation, freeing and memsets memory-bound,
// launches CPU-bound, the rest inconclusive.
Bottleneck tail_cause_class(RequestPart part);
// The same for another thread's part: its CPU samples (OutsideCuda) are
// host code on the CPU, CPU-bound; the rest as tail_cause_class.
Bottleneck concurrent_class(RequestPart part);
// "host code on the CPU (CPU samples)" for OutsideCuda, else request_part_label.
const char* concurrent_part_label(RequestPart part);
// The tail finding (after the verdict: it names a cause of the slowest
// requests, not of the process's average), ranked among the others.
void add_tail_finding(const TraceModel& model, Analysis* analysis);

}  // namespace gpuscope::analyzer
