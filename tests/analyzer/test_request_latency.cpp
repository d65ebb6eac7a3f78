// Requests (--requests, analyzer/requests/): nearest-rank quantiles, which
// requests are the tail and the median band, the thin-evidence rule, and
// the tail's cause from the two groups' parts (rules/tail_rules.cpp), and
// other processes on the same GPU set against the requests (co_tenants.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "co_tenants.h"
#include "../support/sample_trace.h"
#include "request_latency.h"
#include "rules.h"

namespace gpuscope::analyzer {
namespace {

std::vector<RangeInstance> requests_lasting(const std::vector<uint64_t>& durations) {
  std::vector<RangeInstance> out;
  uint64_t at = 1000;
  for (const uint64_t d : durations) {
    out.push_back(RangeInstance{at, at + d, 1, 0, 7, 0, false, false});
    at += d + 10;
  }
  return out;
}

TEST(RequestLatency, NearestRankIsADurationARequestTook) {
  const std::vector<uint64_t> sorted = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(nearest_rank(sorted, 0.5), 50u);   // rank ceil(5) = 5
  EXPECT_EQ(nearest_rank(sorted, 0.95), 100u); // rank ceil(9.5) = 10
  EXPECT_EQ(nearest_rank(sorted, 0.9), 90u);
  EXPECT_EQ(nearest_rank(sorted, 0.999), 100u);
  EXPECT_EQ(nearest_rank({}, 0.5), 0u);
  EXPECT_EQ(nearest_rank({42}, 0.5), 42u);
}

TEST(RequestLatency, TheTailIsRankedAboveTheQuantileAndTheBandAroundTheMedian) {
  std::vector<uint64_t> durations;
  for (uint64_t i = 100; i >= 1; --i) durations.push_back(i * 1000);  // slowest first
  auto requests = requests_lasting(durations);
  requests.push_back(RangeInstance{1, 999999999, 1, 0, 7, 0, false, true});  // unterminated: no latency
  RequestLatency r;
  const std::vector<uint8_t> group = rank_requests(requests, 0.95, &r);
  EXPECT_EQ(r.count, 100u);
  EXPECT_EQ(r.unterminated, 1u);
  EXPECT_EQ(r.max_ns, 100000u);
  EXPECT_EQ(r.tail_from_ns, 96000u);  // ranks 96..100 (1-based)
  ASSERT_EQ(r.quantiles.size(), 5u);
  EXPECT_EQ(r.quantiles[0].ns, 50000u);
  EXPECT_EQ(r.quantiles[3].ns, 99000u);
  EXPECT_EQ(r.slowest.front().duration_ns, 100000u);
  EXPECT_EQ(r.slowest.front().start_ns, requests.front().start_ns);
  EXPECT_TRUE(r.thin_evidence.empty());
  size_t tail = 0, band = 0;
  for (size_t i = 0; i < durations.size(); ++i) {
    const uint64_t d = durations[i];
    EXPECT_EQ(group[i], d > 95000 ? 1 : (d > 40000 && d <= 60000) ? 2 : 0) << d;
    tail += group[i] == 1;
    band += group[i] == 2;
  }
  EXPECT_EQ(tail, 5u);
  EXPECT_EQ(band, 20u);
  EXPECT_EQ(group.back(), 0);
}

// Every duration lands in exactly one bin, bins tile [fastest, slowest]
// without gaps, and a long tail gets log-spaced bins of its own.
TEST(RequestLatency, TheHistogramHoldsEveryRequestOnce) {
  std::vector<uint64_t> sorted;
  for (uint64_t i = 0; i < 95; ++i) sorted.push_back(1'000'000 + i * 1000);  // ~1 ms
  for (uint64_t i = 0; i < 5; ++i) sorted.push_back(50'000'000 + i);        // 50 ms tail
  const std::vector<LatencyBin> bins = latency_histogram(sorted);
  ASSERT_FALSE(bins.empty());
  EXPECT_LE(bins.size(), kHistogramBins);
  EXPECT_EQ(bins.front().from_ns, sorted.front());
  EXPECT_EQ(bins.back().to_ns, sorted.back());
  uint64_t total = 0;
  for (size_t k = 0; k < bins.size(); ++k) {
    total += bins[k].count;
    EXPECT_LT(bins[k].from_ns, bins[k].to_ns);
    if (k > 0) {
      EXPECT_EQ(bins[k].from_ns, bins[k - 1].to_ns);
    }
    // Each bin's count is the durations in [from, to) (the last: [from, to]).
    const auto in_bin = std::count_if(sorted.begin(), sorted.end(), [&](uint64_t d) {
      return d >= bins[k].from_ns && (d < bins[k].to_ns || (k + 1 == bins.size() && d == bins[k].to_ns));
    });
    EXPECT_EQ(bins[k].count, static_cast<uint64_t>(in_bin)) << "bin " << k;
  }
  EXPECT_EQ(total, sorted.size());
  // Log-spaced: the 1 ms requests are spread over bins near the fastest, not one bin of 1.7 ms out of 50.
  EXPECT_LT(bins.front().to_ns, 1'300'000u);
  EXPECT_EQ(bins.back().count, 5u);
  // One duration, or a spread narrower than the bins: still every request once.
  EXPECT_EQ(latency_histogram({7, 7, 7}).size(), 1u);
  EXPECT_EQ(latency_histogram({7, 7, 7})[0].count, 3u);
  uint64_t narrow = 0;
  for (const LatencyBin& b : latency_histogram({10, 11, 12, 12, 13})) narrow += b.count;
  EXPECT_EQ(narrow, 5u);
  EXPECT_TRUE(latency_histogram({}).empty());
  EXPECT_EQ(latency_histogram({0, 0, 5})[0].from_ns, 0u);  // zero-length requests: evenly spaced from 0
}

TEST(RequestLatency, TooFewRequestsOrTooFewInTheTailAreThinEvidence) {
  RequestLatency few;
  rank_requests(requests_lasting(std::vector<uint64_t>(19, 5)), 0.95, &few);
  EXPECT_NE(few.thin_evidence.find("only 19 request(s)"), std::string::npos) << few.thin_evidence;
  RequestLatency enough;
  rank_requests(requests_lasting(std::vector<uint64_t>(100, 5)), 0.95, &enough);
  EXPECT_TRUE(enough.thin_evidence.empty());
  RequestLatency thin_tail;  // 99 requests above p95: 4 in the tail
  rank_requests(requests_lasting(std::vector<uint64_t>(99, 5)), 0.95, &thin_tail);
  EXPECT_NE(thin_tail.thin_evidence.find("only 4 request(s) in the tail"), std::string::npos)
      << thin_tail.thin_evidence;
}

RequestGroup group_of(uint64_t requests, std::initializer_list<std::pair<RequestPart, uint64_t>> parts_ns) {
  RequestGroup g;
  g.requests = requests;
  for (const auto& [part, ns] : parts_ns) {
    g.part_ns[static_cast<size_t>(part)] = ns * requests;
    g.total_ns += ns * requests;
  }
  return g;
}

// `grew_most`: how many tail requests grew most in each part.
RequestLatency compared(RequestGroup tail, RequestGroup median,
                        std::initializer_list<std::pair<RequestPart, uint64_t>> grew_most) {
  RequestLatency r;
  r.name = "request";
  r.tail = std::move(tail);
  r.median_band = std::move(median);
  for (const auto& [part, n] : grew_most) r.tail_grew_most[static_cast<size_t>(part)] = n;
  return r;
}

TEST(TailCause, ATailFromAnotherPartThanTheMediansIsACause) {
  const auto r = compared(group_of(6, {{RequestPart::ExplicitSync, 1000}, {RequestPart::CopyToDevicePageable, 4000}}),
                          group_of(24, {{RequestPart::ExplicitSync, 1000}, {RequestPart::OutsideCuda, 100}}),
                          {{RequestPart::CopyToDevicePageable, 3}, {RequestPart::ExplicitSync, 2},
                           {RequestPart::OutsideCuda, 1}});
  const auto c = tail_cause(r);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->part, RequestPart::CopyToDevicePageable);
  EXPECT_EQ(c->median_part, RequestPart::ExplicitSync);
  EXPECT_TRUE(c->differs);
  EXPECT_DOUBLE_EQ(c->request_share, 0.5);  // at kTailCauseShare
  EXPECT_NEAR(c->slowdown, 5000.0 / 1100, 1e-9);
  EXPECT_NEAR(c->growth_share, 4000.0 / 3900, 1e-9);
}

TEST(TailCause, MoreOfTheMediansOwnPartIsNotADifferentCause) {
  const auto r = compared(group_of(6, {{RequestPart::ExplicitSync, 3000}}),
                          group_of(24, {{RequestPart::ExplicitSync, 1000}}), {{RequestPart::ExplicitSync, 6}});
  const auto c = tail_cause(r);
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->differs);
}

// One slow request (a first request that starts the GPU) moves the tail's
// mean, not its cause: the cause is where most tail requests grew.
TEST(TailCause, OneOutlierIsNoCause) {
  const auto r = compared(group_of(6, {{RequestPart::ExplicitSync, 1100}, {RequestPart::CopyToDevicePinned, 1100}}),
                          group_of(24, {{RequestPart::ExplicitSync, 1000}}),
                          {{RequestPart::CopyToDevicePinned, 1}, {RequestPart::ExplicitSync, 5}});
  const auto c = tail_cause(r);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->part, RequestPart::ExplicitSync);
  EXPECT_FALSE(c->differs);
}

TEST(TailCause, ATightDistributionOrASpreadGrowthHasNone) {
  // 1.4x: below kTailSlowdown.
  EXPECT_FALSE(tail_cause(compared(group_of(6, {{RequestPart::Alloc, 1400}}),
                                   group_of(24, {{RequestPart::ExplicitSync, 1000}}), {{RequestPart::Alloc, 6}})));
  // 2x, but the tail requests grew in three parts, none holding half of them.
  EXPECT_FALSE(tail_cause(compared(
      group_of(6, {{RequestPart::ExplicitSync, 1000}, {RequestPart::Alloc, 340}, {RequestPart::Free, 330},
                   {RequestPart::OutsideCuda, 330}}),
      group_of(24, {{RequestPart::ExplicitSync, 1000}}),
      {{RequestPart::Alloc, 2}, {RequestPart::Free, 2}, {RequestPart::OutsideCuda, 2}})));
  RequestLatency thin = compared(group_of(6, {{RequestPart::Alloc, 9000}}),
                                 group_of(24, {{RequestPart::ExplicitSync, 1000}}), {{RequestPart::Alloc, 6}});
  thin.thin_evidence = "only 10 request(s)";
  EXPECT_FALSE(tail_cause(thin));
}

// Other threads busy during the tail and not the median band: the part with
// the largest difference, when half the tail or more and a fifth of the band
// or less had it.
TEST(TailCause, OtherThreadsBusyOnlyDuringTheTailAreACause) {
  auto tail = group_of(6, {{RequestPart::ExplicitSync, 3000}});
  auto median = group_of(24, {{RequestPart::ExplicitSync, 1000}});
  const auto busy = [](RequestGroup& g, RequestPart part, uint64_t requests, uint64_t ns) {
    g.concurrent_requests[static_cast<size_t>(part)] = requests;
    g.concurrent_ns[static_cast<size_t>(part)] = ns;
  };
  busy(tail, RequestPart::Free, 5, 6 * 2500);
  busy(tail, RequestPart::Launch, 6, 6 * 100);   // every request, but the band too: no difference
  busy(median, RequestPart::Launch, 24, 24 * 100);
  busy(median, RequestPart::Free, 4, 4 * 200);    // a sixth of the band: under kConcurrentBandShare
  RequestLatency r = compared(tail, median, {{RequestPart::ExplicitSync, 6}});
  const auto c = concurrent_cause(r);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->part, RequestPart::Free);
  EXPECT_NEAR(c->tail_share, 5.0 / 6, 1e-12);
  EXPECT_NEAR(c->band_share, 4.0 / 24, 1e-12);
  EXPECT_DOUBLE_EQ(c->overlap_ns, 2500);
  EXPECT_EQ(tail_cause_class(c->part), Bottleneck::MemoryBound);

  // A band as busy as a fifth and more: the same thing happens to typical requests.
  RequestLatency common = r;
  common.median_band.concurrent_requests[static_cast<size_t>(RequestPart::Free)] = 6;
  EXPECT_FALSE(concurrent_cause(common));
  // Under half the tail.
  RequestLatency rare = r;
  rare.tail.concurrent_requests[static_cast<size_t>(RequestPart::Free)] = 2;
  EXPECT_FALSE(concurrent_cause(rare));
  // A tail that is not slow, or thin evidence: nothing to explain.
  RequestLatency tight = r;
  tight.tail = group_of(6, {{RequestPart::ExplicitSync, 1400}});
  tight.tail.concurrent_requests = r.tail.concurrent_requests;
  EXPECT_FALSE(concurrent_cause(tight));
  RequestLatency thin = r;
  thin.thin_evidence = "only 10 request(s)";
  EXPECT_FALSE(concurrent_cause(thin));
}

// A tail whose own thread grew most outside CUDA (a wait gpuscope cannot see
// into) while another thread was in cudaFree during every tail request and
// no band request: the other thread's freeing is the finding, the own
// thread's wait its evidence. Were the own thread's growth a CUDA part (a
// pageable copy), that part stays the finding.
TEST(TailCause, AnotherThreadsFreeingExplainsATailThatWaitedOutsideCuda) {
  auto tail = group_of(6, {{RequestPart::ExplicitSync, 1000}, {RequestPart::OutsideCuda, 3000}});
  const auto median = group_of(24, {{RequestPart::ExplicitSync, 1000}});
  tail.concurrent_requests[static_cast<size_t>(RequestPart::Free)] = 6;
  tail.concurrent_ns[static_cast<size_t>(RequestPart::Free)] = 6 * 3500;
  const auto finding_of = [](const RequestLatency& r) {
    Analysis analysis;
    analysis.requests = r;
    add_tail_finding(TraceModel{}, &analysis);
    EXPECT_EQ(analysis.findings.size(), 1u);
    return analysis.findings.empty() ? Finding{} : analysis.findings.front();
  };
  const Finding waited = finding_of(compared(tail, median, {{RequestPart::OutsideCuda, 5}, {RequestPart::Free, 1}}));
  EXPECT_EQ(waited.cls, Bottleneck::MemoryBound);
  EXPECT_NE(waited.title.find("another thread of the process is in freeing: 100% of them"), std::string::npos)
      << waited.title;
  const bool own_wait_shown = std::any_of(waited.evidence.begin(), waited.evidence.end(), [](const std::string& e) {
    return e.find("on their own thread the tail requests grew most in outside CUDA") != std::string::npos;
  });
  EXPECT_TRUE(own_wait_shown);

  auto copied = tail;
  copied.part_ns[static_cast<size_t>(RequestPart::OutsideCuda)] = 0;
  copied.part_ns[static_cast<size_t>(RequestPart::CopyToDevicePageable)] = 6 * 3000;
  const Finding copy =
      finding_of(compared(copied, median, {{RequestPart::CopyToDevicePageable, 5}, {RequestPart::Free, 1}}));
  EXPECT_EQ(copy.cls, tail_cause_class(RequestPart::CopyToDevicePageable));
  EXPECT_NE(copy.title.find("slow from"), std::string::npos) << copy.title;

  // Another thread in fewer tail requests than grew outside CUDA: the wait stays the finding.
  tail.concurrent_requests[static_cast<size_t>(RequestPart::Free)] = 3;
  const Finding fewer = finding_of(compared(tail, median, {{RequestPart::OutsideCuda, 5}, {RequestPart::Free, 1}}));
  EXPECT_EQ(fewer.cls, Bottleneck::Inconclusive);
}

GpuTenant tenant(int pid, std::string boot, std::vector<std::string> uuids,
                 std::vector<std::pair<uint64_t, uint64_t>> busy) {
  GpuTenant t;
  t.pid = pid;
  t.exe = "/opt/jobs/batch_embed";
  t.boot_id = std::move(boot);
  t.gpu_uuids = std::move(uuids);
  t.busy = std::move(busy);
  return t;
}

reader::TraceSummary service_on(const std::string& boot, const std::string& uuid) {
  reader::TraceSummary s;
  s.process.emplace();
  s.process->pid = 100;
  s.process->boot_id = boot;
  if (!uuid.empty()) s.devices.push_back(container::DeviceDescription{0, "GPU", uuid});
  return s;
}

TEST(CoTenants, BusyTimeIsClippedToTheSpan) {
  const GpuTenant t = tenant(7, "b", {}, {{100, 200}, {300, 400}, {500, 600}});
  EXPECT_EQ(t.busy_within(0, 1000), 300u);
  EXPECT_EQ(t.busy_within(150, 350), 100u);  // 50 of the first, 50 of the second
  EXPECT_EQ(t.busy_within(200, 300), 0u);    // between two: none
  EXPECT_EQ(t.busy_within(550, 551), 1u);
  EXPECT_EQ(t.busy_within(700, 800), 0u);
}

// A co-tenant's trace as the writer makes it: its waiting calls, or its
// device records when it has any.
std::vector<uint8_t> tenant_trace(bool with_device_records) {
  constexpr uint64_t kMs = 1'000'000, kT0 = 1'000 * kMs;
  capture::ProcessMetadata m;
  m.pid = 4417;
  m.exe = "/opt/jobs/batch_embed";
  m.boot_id = "boot-a";
  m.start_monotonic_ns = kT0;
  return test::one_frame_trace(m, kT0 + 100 * kMs, [&](capture::ChunkBuilder& b) {
    b.add_strings({{1, "cudaDeviceSynchronize"}, {2, "cudaLaunchKernel"}, {3, "cuCtxSynchronize"}, {4, "embed"}});
    container::DeviceDescription gpu;
    gpu.uuid = "GPU-1";
    b.add_device(gpu);
    b.add(fb::ApiCall(kT0, kMs, 1, 0, 9, 0, 0, 2, 0, 0, 0, 0));                  // a launch: no waiting
    b.add(fb::ApiCall(kT0 + 2 * kMs, 8 * kMs, 2, 0, 9, 0, 0, 1, 0, 0, 0, 0));     // waits 2-10 ms
    b.add(fb::ApiCall(kT0 + 3 * kMs, 6 * kMs, 2, 0, 9, 0, 0, 3, 1, 0, 0, 0));     // nested: counted once
    b.add(fb::ApiCall(kT0 + 20 * kMs, 5 * kMs, 3, 0, 9, 0, 0, 1, 0, 0, 0, 0));    // waits 20-25 ms
    b.add(fb::Kernel(kT0 + kMs, 2 * kMs, 1, 0, 4, 1, 1, 1, 1, 1, 1, 0, 0, fb::Source::Host, 0, 0, 0));
    if (!with_device_records) return;
    for (const auto& [from, to] : {std::pair{1, 4}, std::pair{3, 6}, std::pair{21, 22}})
      b.add(fb::Kernel(kT0 + from * kMs, (to - from) * kMs, 1, 0, 4, 1, 1, 1, 1, 1, 1, 0, 0, fb::Source::Device, 0,
                       0, 0));
  });
}

GpuTenant read_tenant(const std::vector<uint8_t>& bytes) {
  reader::TraceReader trace;
  std::string error;
  EXPECT_TRUE(trace.open(reader::memory_source(bytes), "batch.gpuscope", &error)) << error;
  return read_gpu_tenant(trace, "batch.gpuscope");
}

TEST(CoTenants, ATraceWithoutDeviceRecordsIsBusyWhileItsCallsWaitForTheGpu) {
  const GpuTenant t = read_tenant(tenant_trace(false));
  EXPECT_EQ(t.pid, 4417);
  EXPECT_EQ(t.exe, "/opt/jobs/batch_embed");
  EXPECT_EQ(t.boot_id, "boot-a");
  EXPECT_EQ(t.gpu_uuids, std::vector<std::string>{"GPU-1"});
  EXPECT_EQ(t.busy_from, BusyFrom::WaitingCalls);
  EXPECT_FALSE(t.damaged);
  constexpr uint64_t kMs = 1'000'000, kT0 = 1'000 * kMs;
  const std::vector<std::pair<uint64_t, uint64_t>> want = {{kT0 + 2 * kMs, kT0 + 10 * kMs},
                                                           {kT0 + 20 * kMs, kT0 + 25 * kMs}};
  EXPECT_EQ(t.busy, want);
}

TEST(CoTenants, ATraceWithDeviceRecordsIsBusyWhileThoseRun) {
  const GpuTenant t = read_tenant(tenant_trace(true));
  EXPECT_EQ(t.busy_from, BusyFrom::DeviceRecords);
  constexpr uint64_t kMs = 1'000'000, kT0 = 1'000 * kMs;
  const std::vector<std::pair<uint64_t, uint64_t>> want = {{kT0 + 1 * kMs, kT0 + 6 * kMs},  // two overlapping kernels
                                                           {kT0 + 21 * kMs, kT0 + 22 * kMs}};
  EXPECT_EQ(t.busy, want);
  // Cut inside its frame: what could be read is kept, and it is marked damaged.
  std::vector<uint8_t> cut = tenant_trace(true);
  cut.resize(cut.size() - 10);
  EXPECT_TRUE(read_tenant(cut).damaged);
}

// Same boot (one monotonic clock), another pid, a GPU in common; a trace
// that names no GPU is taken as on the host's GPUs.
TEST(CoTenants, OnlyOtherProcessesOfTheSameBootOnTheSameGpuAreCoTenants) {
  GpuTenants all = {tenant(100, "boot-a", {"GPU-1"}, {{1, 2}}),   // the service itself
                    tenant(7, "boot-a", {"GPU-1"}, {{1, 2}}),     // co-tenant
                    tenant(8, "boot-b", {"GPU-1"}, {{1, 2}}),     // another boot: no common clock
                    tenant(9, "boot-a", {"GPU-2"}, {{1, 2}}),     // another GPU
                    tenant(10, "boot-a", {}, {{1, 2}}),           // no GPU named
                    tenant(11, "boot-a", {"GPU-1"}, {})};         // never busy
  std::vector<int> pids;
  for (const GpuTenant* t : co_tenants_of(service_on("boot-a", "GPU-1"), all)) pids.push_back(t->pid);
  EXPECT_EQ(pids, (std::vector<int>{7, 10}));
  EXPECT_EQ(others_than(service_on("boot-a", "GPU-1"), all), 5u);
  EXPECT_TRUE(co_tenants_of(service_on("", "GPU-1"), all).empty());  // no boot id: nothing to line up on
}

// Each co-tenant's busy time inside the tail's and the band's requests, and
// the requests it covered kCoTenantShare of or more.
TEST(CoTenants, OverlapsCountRequestsTheCoTenantHeld) {
  const std::vector<GroupedSpan> spans = {{0, 100, 1}, {200, 300, 1}, {400, 500, 2}, {600, 700, 2}};
  const GpuTenant busy = tenant(7, "b", {}, {{50, 250}, {690, 695}});
  const GpuTenant idle = tenant(8, "b", {}, {{800, 900}});
  const auto out = overlap_co_tenants(spans, {&idle, &busy});
  ASSERT_EQ(out.size(), 1u);  // the idle one overlapped nothing
  EXPECT_EQ(out[0].pid, 7);
  EXPECT_EQ(out[0].tail_ns, 100u);  // 50 + 50
  EXPECT_EQ(out[0].tail_requests, 2u);
  EXPECT_EQ(out[0].band_ns, 5u);
  EXPECT_EQ(out[0].band_requests, 0u);  // 5 % of the request: under kCoTenantShare
}

// The co-tenant cause: busy during half the tail or more and a fifth of the
// band or less, in a slow tail with enough evidence.
TEST(TailCause, AProcessOnTheSameGpuBusyOnlyDuringTheTailIsACause) {
  RequestLatency r = compared(group_of(6, {{RequestPart::ExplicitSync, 3000}}),
                              group_of(24, {{RequestPart::ExplicitSync, 1000}}), {{RequestPart::ExplicitSync, 6}});
  r.co_tenants = {CoTenantOverlap{7, "batch", "t", BusyFrom::WaitingCalls, 0, false, 6 * 2000, 100, 5, 4},
                  CoTenantOverlap{8, "always", "u", BusyFrom::WaitingCalls, 0, false, 6 * 1000, 24 * 500, 6, 24}};
  const auto c = co_tenant_cause(r);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->tenant->pid, 7);  // the one that is busy with the typical requests too is no difference
  EXPECT_NEAR(c->tail_share, 5.0 / 6, 1e-12);
  EXPECT_NEAR(c->band_share, 4.0 / 24, 1e-12);
  EXPECT_NEAR(c->held_share, 12000.0 / 18000, 1e-12);
  EXPECT_NE(co_tenant_line(r, *c).find("co-tenant pid 7 (batch)"), std::string::npos) << co_tenant_line(r, *c);
  EXPECT_EQ(co_tenant_line(r, *c).find("damaged"), std::string::npos);
  RequestLatency damaged = r;
  damaged.co_tenants[0].damaged = true;  // what it did past the damage is not seen: said so
  EXPECT_NE(co_tenant_line(damaged, *co_tenant_cause(damaged)).find("its trace is damaged or truncated"),
            std::string::npos);
  RequestLatency common = r;
  common.co_tenants[0].band_requests = 6;  // a quarter of the band
  EXPECT_FALSE(co_tenant_cause(common));
  RequestLatency rare = r;
  rare.co_tenants[0].tail_requests = 2;
  EXPECT_FALSE(co_tenant_cause(rare));
  RequestLatency tight = r;
  tight.tail = group_of(6, {{RequestPart::ExplicitSync, 1400}});
  EXPECT_FALSE(co_tenant_cause(tight));
  RequestLatency thin = r;
  thin.thin_evidence = "only 10 request(s)";
  EXPECT_FALSE(co_tenant_cause(thin));
}

}  // namespace
}  // namespace gpuscope::analyzer
