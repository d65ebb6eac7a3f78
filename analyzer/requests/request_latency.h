// Tail latency per request (issue 24): a request is each NVTX range with the
// message `gpuscope analyze --requests NAME` names (any domain, push/pop or
// start/end, other ranges nested inside allowed; the ranges are the range
// model's, range_model.h). Durations come from the ranges alone, so the
// quantiles and which requests are the tail are known before the records
// are read again; that pass (RequestTally) then sums, for the tail and for
// the band around the median only, where each request's own thread spent
// its time. Memory grows with requests (one entry each) and call sites,
// never with events. docs/rules.md "Requests and tail latency".
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace_model.h"

namespace gpuscope::analyzer {

// Where a request's thread spent its time: each outermost CUDA call's host
// time in one part (copies by direction and host memory kind, from the
// call's Copy record), and the rest of the request's span outside CUDA.
enum class RequestPart : uint8_t {
  CopyToDevicePageable, CopyToDevicePinned, CopyToHostPageable, CopyToHostPinned, CopyOther, Memset,
  ExplicitSync, ImplicitSync, Launch, Alloc, Free, OtherCuda, OutsideCuda
};
inline constexpr size_t kRequestParts = 13;
const char* request_part_id(RequestPart part);     // "copy_to_device_pageable" (JSON)
const char* request_part_label(RequestPart part);  // "host->device copies from pageable memory"

inline constexpr double kDefaultTailQuantile = 0.95;
// The band compared with the tail: the requests ranked p40-p60.
inline constexpr double kMedianBandLow = 0.40, kMedianBandHigh = 0.60;
// Fewer requests, or fewer in the tail, and the comparison is not judged.
inline constexpr uint64_t kMinRequestsJudged = 20;
inline constexpr uint64_t kMinTailRequests = 5;
inline constexpr size_t kSlowestShown = 5;
// A tail slower than the median band by this factor is worth explaining
// (rules/tail_rules.cpp); a tail request that slow on its own is a slow
// request, the only kind whose growth names a cause.
inline constexpr double kTailSlowdown = 1.5;

// Another thread's time in a part counts as busy during a request when it
// covers this share of the request's span or more (a stray call is not a
// storm).
inline constexpr double kConcurrentShare = 0.10;
// Requests looked back at for another thread's call (the requests open at
// its start, in start order): more requests in flight at once than this and
// the earliest-started ones miss that call, counted in overlap_lookups_cut.
inline constexpr size_t kOverlapLookback = 64;
// Calls of tail and median-band requests remembered until their device
// records come (CUPTI delivers them late); past this many, counted instead.
inline constexpr size_t kMaxDeviceLinks = size_t{1} << 20;
// The function id of another thread's CPU samples among the concurrent
// sites (no CUDA function has id 0): its stack is where its CPU time went.
inline constexpr uint32_t kOnCpuSite = 0;

// The time, bytes and calls of a group of requests (the tail or the median
// band), summed over its requests.
struct RequestGroup {
  uint64_t requests = 0, total_ns = 0;
  std::array<uint64_t, kRequestParts> part_ns{};
  uint64_t copied_bytes = 0, kernels = 0, cuda_calls = 0;
  struct Site {
    RequestPart part = RequestPart::OtherCuda;
    TimeCount calls;
  };
  std::unordered_map<SiteKey, Site, SiteKeyHash> sites;
  // What the process's other threads were doing in CUDA while the group's
  // requests were open: their outermost calls' time overlapping each
  // request, by part (summed), how many requests had another thread busy in
  // the part (kConcurrentShare of the request or more), and the other
  // threads' call sites by overlapping time.
  std::array<uint64_t, kRequestParts> concurrent_ns{};
  std::array<uint64_t, kRequestParts> concurrent_requests{};
  std::unordered_map<SiteKey, Site, SiteKeyHash> concurrent_sites;
  // Device time (CUPTI or an imported trace's device records) of the work
  // the group's own calls issued: kernels, copies, memsets.
  uint64_t device_kernel_ns = 0, device_copy_ns = 0, device_memset_ns = 0;
  // Per request, averaged over the group.
  double per_request(uint64_t total) const { return requests ? static_cast<double>(total) / requests : 0; }
  double mean_ns() const { return per_request(total_ns); }
  double mean_part_ns(size_t part) const { return requests ? static_cast<double>(part_ns[part]) / requests : 0; }
  double concurrent_request_share(size_t part) const {
    return requests ? static_cast<double>(concurrent_requests[part]) / requests : 0;
  }
};

// Another process on the same GPU busy for this share of a request's span
// or more held the GPU during it (the same bar as another thread's).
inline constexpr double kCoTenantShare = kConcurrentShare;

// A co-tenant (co_tenants.h) during the tail and the median band: its busy
// time inside the groups' requests (summed), and how many requests of each
// group it was busy for kCoTenantShare of or more.
// Where a co-tenant's busy time comes from, most exact first.
enum class BusyFrom : uint8_t {
  DeviceRecords,  // its trace's kernels, copies and memsets (CUPTI)
  WaitingCalls,   // its trace's CUDA calls that waited for its GPU work
  DriverSamples   // not traced: the driver's per-process utilization samples in this trace (NVML)
};
const char* busy_from_name(BusyFrom from);  // "device_records", "waiting_calls", "driver_samples"

struct CoTenantOverlap {
  int pid = 0;
  std::string exe, trace;       // trace: empty for a process known from the driver's samples only
  BusyFrom busy_from = BusyFrom::WaitingCalls;
  uint64_t sample_window_ns = 0;  // DriverSamples: the median time one sample covers
  bool damaged = false;         // its trace is damaged or truncated
  uint64_t tail_ns = 0, band_ns = 0;
  uint64_t tail_requests = 0, band_requests = 0;
  // The program's file name, and "pid 4417 (batch_embed)".
  std::string program() const { return exe.substr(exe.rfind('/') + 1); }
  std::string name() const { return "pid " + std::to_string(pid) + " (" + (exe.empty() ? "unknown" : program()) + ")"; }
};

struct RequestQuantile {
  double quantile = 0;  // 0.5, 0.9, 0.95, 0.99, 0.999
  uint64_t ns = 0;
};

// Requests with durations in [from_ns, to_ns) (the last bin includes its
// upper edge): the distribution the HTML report draws.
struct LatencyBin {
  uint64_t from_ns = 0, to_ns = 0, count = 0;
};
inline constexpr size_t kHistogramBins = 30;

struct SlowRequest {
  uint64_t start_ns = 0, duration_ns = 0;
  uint32_t tid = 0;
};

struct RequestLatency {
  std::string name;          // the NVTX message; empty: --requests not given
  uint64_t count = 0;        // measured requests (closed ranges starting in the analyzed window)
  uint64_t unterminated = 0; // still open at the end of the trace: no latency, left out
  std::vector<RequestQuantile> quantiles;  // nearest rank over `count` durations
  uint64_t max_ns = 0;
  uint64_t total_ns = 0;                   // the `count` durations summed (a Prometheus summary's _sum)
  std::vector<SlowRequest> slowest;       // slowest first
  std::vector<LatencyBin> histogram;      // latency_histogram() of the `count` durations
  double tail_quantile = kDefaultTailQuantile;
  uint64_t tail_from_ns = 0;              // the fastest request of the tail
  RequestGroup tail, median_band;
  // Per part: the slow tail requests (kTailSlowdown x the median band's
  // mean or more) whose own time grew most in it over the band's mean (one
  // outlier, like a first request that starts the GPU, moves the tail's
  // mean but is one request here; a tail request barely slower than the
  // median grew in noise, and counts nowhere).
  std::array<uint64_t, kRequestParts> tail_grew_most{};
  std::string thin_evidence;              // why the tail is not compared; empty when it is
  uint64_t overlap_lookups_cut = 0;       // other threads' calls whose overlap search stopped at kOverlapLookback
  bool device_records = false;            // the trace has device timestamps: the groups' device_* are measured
  uint64_t device_links_over_limit = 0;   // requests' calls past kMaxDeviceLinks: their device time is not counted
  // Other processes' traces given with this one that shared its GPU, and
  // what each did during the groups (busiest in the tail first).
  std::vector<CoTenantOverlap> co_tenants;
  uint64_t other_traces = 0;              // traces given alongside, co-tenants or not
  // The driver's per-process utilization samples in this trace (format
  // 1.8): how many, whether they named this process (in another pid
  // namespace, a container, they cannot: then they are not used), and how
  // many other processes they named on this process's GPUs.
  struct DriverSamples {
    uint64_t samples = 0;
    bool named_self = false;
    uint64_t other_processes = 0;
  } driver_samples;
  bool requested() const { return !name.empty(); }
};

// "p50", "p99.9": a quantile as the report prints it and diff names its figure.
std::string quantile_name(double quantile);

// The nearest-rank quantile of sorted durations: the value at rank
// ceil(q * n) (1-based), so every quantile is a duration a request took.
uint64_t nearest_rank(const std::vector<uint64_t>& sorted, double quantile);

// Up to kHistogramBins bins from the fastest duration to the slowest,
// log-spaced when the slowest is 2x the fastest or more (a tail ten times the
// median still gets bins of its own), evenly spaced otherwise; every duration
// is in one bin. Empty for no durations.
std::vector<LatencyBin> latency_histogram(const std::vector<uint64_t>& sorted);

// The requests' groups, by index into the range model: 1 tail, 2 median
// band, 0 neither; fills the figures that need durations only.
std::vector<uint8_t> rank_requests(const std::vector<RangeInstance>& requests, double tail_quantile,
                                   RequestLatency* out);

}  // namespace gpuscope::analyzer
