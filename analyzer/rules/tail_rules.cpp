// Tail latency (--requests): the requests above the tail quantile against
// the band around the median, per part of their time (request_latency.h).
// The cause is the part most tail requests grew most in, not the largest
// growth of the tail's mean: one outlier request does not make a cause.
// The finding is about a cause the median does not have: a tail that is only
// more of the median's own largest part is the same cause, which the
// process's findings already name. docs/rules.md "Requests and tail latency".
#include <algorithm>

#include "rules_internal.h"

namespace gpuscope::analyzer {
namespace {

size_t largest_part(const RequestGroup& g) {
  size_t best = 0;
  for (size_t p = 1; p < kRequestParts; ++p)
    if (g.part_ns[p] > g.part_ns[best]) best = p;
  return best;
}

}  // namespace

Bottleneck tail_cause_class(RequestPart part) {
  switch (part) {
    case RequestPart::CopyToDevicePageable: case RequestPart::CopyToDevicePinned:
    case RequestPart::CopyToHostPageable: case RequestPart::CopyToHostPinned: case RequestPart::CopyOther:
      return Bottleneck::PcieBound;
    case RequestPart::ExplicitSync: case RequestPart::ImplicitSync: return Bottleneck::SyncBound;
    case RequestPart::Alloc: case RequestPart::Free: case RequestPart::Memset: return Bottleneck::MemoryBound;
    case RequestPart::Launch: return Bottleneck::CpuBound;
    default: return Bottleneck::Inconclusive;
  }
}

Bottleneck concurrent_class(RequestPart part) {
  return part == RequestPart::OutsideCuda ? Bottleneck::CpuBound : tail_cause_class(part);
}

const char* concurrent_part_label(RequestPart part) {
  return part == RequestPart::OutsideCuda ? "host code on the CPU (its CPU samples)" : request_part_label(part);
}

namespace {

const char* fix_for(RequestPart part) {
  switch (tail_cause_class(part)) {
    case Bottleneck::PcieBound:
      return "stage the occasional large inputs and results in pinned buffers (a cudaHostAlloc pool, or "
             "cudaHostRegister on the existing ones) and keep tensors resident between requests, so a large request "
             "moves at pinned bandwidth without blocking its thread";
    case Bottleneck::SyncBound:
      return "wait only for the request's own work (cudaStreamSynchronize or an event on its stream, not "
             "cudaDeviceSynchronize), and find what else was queued when the slow requests waited";
    case Bottleneck::MemoryBound:
      return "allocate outside the request path: a preallocated pool or cudaMallocAsync/cudaFreeAsync with a memory "
             "pool (cudaFree waits for the device to drain)";
    case Bottleneck::CpuBound: return "launch less per request: CUDA graphs for the fixed part, fused kernels";
    default:
      return "the slow requests' extra time is on their thread outside CUDA: look for queueing, locks or host "
             "work that only some requests do (CPU samples show where the host time goes)";
  }
}

// The sites of the grown part, by how much more each costs per tail request.
std::vector<CallSite> grown_sites(const TraceModel& m, const RequestLatency& r, RequestPart part) {
  std::vector<std::pair<double, CallSite>> grown;
  for (const auto& [key, site] : r.tail.sites) {
    if (site.part != part) continue;
    double median_ns = 0;
    if (auto it = r.median_band.sites.find(key); it != r.median_band.sites.end())
      median_ns = static_cast<double>(it->second.calls.ns) / std::max<uint64_t>(1, r.median_band.requests);
    const double growth = static_cast<double>(site.calls.ns) / r.tail.requests - median_ns;
    if (growth > 0)
      grown.push_back({growth, CallSite{m.summary.name_of(key.function_id), key.stack_id, site.calls.count,
                                        site.calls.ns}});
  }
  std::sort(grown.begin(), grown.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<CallSite> out;
  for (size_t i = 0; i < grown.size() && i < kTailSitesShown; ++i) out.push_back(grown[i].second);
  return out;
}

// What the requests' own work took on the device (CUPTI or imported device
// records): more device time in the tail is more work, not more waiting.
std::string device_line(const RequestLatency& r) {
  const RequestGroup &t = r.tail, &b = r.median_band;
  return fmt::format("device time per request, tail against median band: kernels {:.3f} against {:.3f} ms, copies "
                     "{:.3f} against {:.3f} ms",
                     t.per_request(t.device_kernel_ns) / 1e6, b.per_request(b.device_kernel_ns) / 1e6,
                     t.per_request(t.device_copy_ns) / 1e6, b.per_request(b.device_copy_ns) / 1e6);
}

std::vector<std::string> tail_evidence(const RequestLatency& r, const TailCause& c) {
  const RequestGroup &t = r.tail, &b = r.median_band;
  const auto p = static_cast<size_t>(c.part), mp = static_cast<size_t>(c.median_part);
  std::vector<std::string> e;
  e.push_back(fmt::format("{} \"{}\" requests: p50 {:.3f} ms; the tail above p{:g} starts at {:.3f} ms; max {:.3f} ms", r.count, r.name,
                          r.quantiles.empty() ? 0 : r.quantiles[0].ns / 1e6, r.tail_quantile * 100,
                          r.tail_from_ns / 1e6, r.max_ns / 1e6));
  e.push_back(fmt::format("tail ({} requests): {:.3f} ms each on average; median band p{:g}-p{:g} ({} requests): "
                          "{:.3f} ms; {:.1f}x slower",
                          t.requests, t.mean_ns() / 1e6, kMedianBandLow * 100, kMedianBandHigh * 100, b.requests,
                          b.mean_ns() / 1e6, c.slowdown));
  e.push_back(fmt::format("{} of the {} tail requests grew most in {}: {:.3f} ms per tail request against {:.3f} ms "
                          "in the median band ({} of the extra time)",
                          r.tail_grew_most[p], t.requests, request_part_label(c.part), t.mean_part_ns(p) / 1e6,
                          b.mean_part_ns(p) / 1e6, pct(c.growth_share)));
  e.push_back(fmt::format("the median band's largest part is {} ({} of its time)", request_part_label(c.median_part),
                          pct(b.total_ns ? static_cast<double>(b.part_ns[mp]) / b.total_ns : 0)));
  e.push_back(fmt::format("per request, tail against median band: {:.1f} against {:.1f} KiB copied, {:.1f} against "
                          "{:.1f} kernels, {:.1f} against {:.1f} CUDA calls",
                          t.per_request(t.copied_bytes) / 1024, b.per_request(b.copied_bytes) / 1024,
                          t.per_request(t.kernels), b.per_request(b.kernels), t.per_request(t.cuda_calls),
                          b.per_request(b.cuda_calls)));
  if (r.device_records) e.push_back(device_line(r));
  return e;
}

// The other threads' sites of `part` by their time inside the tail requests.
std::vector<CallSite> concurrent_sites(const TraceModel& m, const RequestLatency& r, RequestPart part) {
  std::vector<CallSite> out;
  for (const auto& [key, site] : r.tail.concurrent_sites)
    if (site.part == part) {
      const std::string name = key.function_id == kOnCpuSite ? "(on CPU)" : m.summary.name_of(key.function_id);
      out.push_back(CallSite{name, key.stack_id, site.calls.count, site.calls.ns});
    }
  std::sort(out.begin(), out.end(), [](const CallSite& a, const CallSite& b) { return a.ns > b.ns; });
  if (out.size() > kTailSitesShown) out.resize(kTailSitesShown);
  return out;
}

const char* concurrent_fix_for(RequestPart part) {
  if (part == RequestPart::OutsideCuda)
    return "another thread's host code was on the CPU while the slow requests waited: if it holds a lock the "
           "requests need (the Python GIL, a model or queue lock), shorten what it does under the lock or move it "
           "off the request path; if the cores are saturated, give the request threads cores of their own (cpuset) "
           "or run the background work at a lower priority";
  switch (tail_cause_class(part)) {
    case Bottleneck::MemoryBound:
      return "take the other thread's allocations out of the requests' way: preallocate its buffers or give it a "
             "memory pool (cudaMallocAsync/cudaFreeAsync); cudaFree and cudaMalloc of new memory wait for the whole "
             "device, so every request in flight waits with them";
    case Bottleneck::SyncBound:
      return "the other thread's device-wide synchronization waits for the requests' work and holds its own "
             "behind it: let it wait for its own stream or an event (cudaStreamSynchronize, cudaEventSynchronize)";
    case Bottleneck::PcieBound:
      return "the other thread's copies share the link and the copy engines with the requests': stage them in "
             "pinned memory, move them between requests, or put them on a lower-priority stream";
    default:
      return "the other thread's GPU work competes with the requests: run it between requests, or give the "
             "requests' stream a higher priority (cudaStreamCreateWithPriority)";
  }
}

std::string concurrent_line(const RequestLatency& r, const ConcurrentCause& c) {
  return fmt::format("{} of the {} tail requests had another thread in {} for {} of the request or more ({:.3f} ms "
                     "inside each tail request on average), against {} of the {} median band requests",
                     r.tail.concurrent_requests[static_cast<size_t>(c.part)], r.tail.requests,
                     concurrent_part_label(c.part), pct(kConcurrentShare), c.overlap_ns / 1e6,
                     r.median_band.concurrent_requests[static_cast<size_t>(c.part)], r.median_band.requests);
}

// Where the tail requests waited on their own thread, when the cause is
// elsewhere: an evidence line, and that part's grown call sites.
void add_own_growth(const TraceModel& model, const RequestLatency& r, const std::optional<TailCause>& own, Finding* f) {
  if (!own) return;
  const auto p = static_cast<size_t>(own->part);
  f->evidence.push_back(fmt::format("on their own thread the tail requests grew most in {}: {:.3f} ms per tail "
                                    "request against {:.3f} ms in the median band (where they waited)",
                                    request_part_label(own->part), r.tail.mean_part_ns(p) / 1e6,
                                    r.median_band.mean_part_ns(p) / 1e6));
  for (CallSite& s : grown_sites(model, r, own->part)) f->sites.push_back(std::move(s));
}

// The finding when the tail's difference is on other threads: the own
// thread's growth (where the requests waited) follows as evidence.
Finding concurrent_finding(const TraceModel& model, const RequestLatency& r, const ConcurrentCause& c,
                           const std::optional<TailCause>& own) {
  Finding f;
  f.cls = concurrent_class(c.part);
  f.title = fmt::format("the slowest \"{}\" requests (above p{:g}) are slow while another thread of the process is in "
                        "{}: {} of them, {} of the median band",
                        r.name, r.tail_quantile * 100, concurrent_part_label(c.part), pct(c.tail_share),
                        pct(c.band_share));
  f.evidence.push_back(fmt::format("tail ({} requests): {:.3f} ms each on average; median band ({} requests): {:.3f} "
                                   "ms; {:.1f}x slower",
                                   r.tail.requests, r.tail.mean_ns() / 1e6, r.median_band.requests,
                                   r.median_band.mean_ns() / 1e6, r.tail.mean_ns() / r.median_band.mean_ns()));
  f.evidence.push_back(concurrent_line(r, c));
  f.sites = concurrent_sites(model, r, c.part);
  add_own_growth(model, r, own, &f);
  if (r.device_records) f.evidence.push_back(device_line(r));
  f.fix = concurrent_fix_for(c.part);
  return f;
}

// The finding when the tail's difference is another process on the GPU.
// Where a co-tenant's busy time came from, and what that cannot tell.
std::string busy_source_line(const CoTenantOverlap& t) {
  switch (t.busy_from) {
    case BusyFrom::DeviceRecords:
      return "its busy time is its kernels, copies and memsets from its device records (CUPTI)";
    case BusyFrom::WaitingCalls:
      return "its busy time is estimated from its own CUDA calls that waited for the GPU (synchronization, copies, "
             "memsets, frees): without its device records (CUPTI) the estimate cannot tell its work running from "
             "its work queued behind the requests'";
    case BusyFrom::DriverSamples:
      break;
  }
  return fmt::format("it was not traced: its busy time is its share of the GPU in the driver's per-process samples "
                     "(NVML, the larger of SM and memory utilization), spread evenly over each sample's window of "
                     "about {:.0f} ms, so it says the process was busy around the requests, not inside which of "
                     "their calls; trace it too (same gpuscope run, or give its trace) for its exact busy time",
                     t.sample_window_ns / 1e6);
}

Finding co_tenant_finding(const TraceModel& model, const RequestLatency& r, const CoTenantCause& c,
                          const std::optional<TailCause>& own) {
  Finding f;
  f.cls = own ? tail_cause_class(own->part) : Bottleneck::Inconclusive;
  f.title = fmt::format("the slowest \"{}\" requests (above p{:g}) are slow while another process uses the same "
                        "GPU: {} was busy on it during {} of them, {} of the median band",
                        r.name, r.tail_quantile * 100, c.tenant->name(), pct(c.tail_share), pct(c.band_share));
  f.evidence.push_back(fmt::format("tail ({} requests): {:.3f} ms each on average; median band ({} requests): {:.3f} "
                                   "ms; {:.1f}x slower",
                                   r.tail.requests, r.tail.mean_ns() / 1e6, r.median_band.requests,
                                   r.median_band.mean_ns() / 1e6, r.tail.mean_ns() / r.median_band.mean_ns()));
  f.evidence.push_back(co_tenant_line(r, c));
  f.evidence.push_back(busy_source_line(*c.tenant));
  add_own_growth(model, r, own, &f);
  f.fix = fmt::format("the service shares its GPU with {}: the GPU time-slices the two processes, so requests that "
                      "arrive during its bursts wait for its work. {}",
                      c.tenant->name(), shared_gpu_remedies("the service", "the other job"));
  return f;
}

}  // namespace

std::string co_tenant_line(const RequestLatency& r, const CoTenantCause& c) {
  const CoTenantOverlap& t = *c.tenant;
  const double band_held = r.median_band.total_ns ? static_cast<double>(t.band_ns) / r.median_band.total_ns : 0;
  return fmt::format("co-tenant {} ({}) was busy on the GPU for {} of the tail requests' time ({:.3f} ms inside each "
                     "on average), and for {} or more of {} of the {} tail requests against {} of the {} median band "
                     "requests ({} of their time)",
                     t.name(), t.trace.empty() ? "not traced; from the driver's samples" : t.trace, pct(c.held_share),
                     r.tail.per_request(t.tail_ns) / 1e6,
                     pct(kCoTenantShare), t.tail_requests, r.tail.requests, t.band_requests, r.median_band.requests,
                     pct(band_held)) +
         (t.damaged ? "; its trace is damaged or truncated, so its busy time past the damage is not seen" : "");
}

std::optional<CoTenantCause> co_tenant_cause(const RequestLatency& r) {
  const RequestGroup &t = r.tail, &b = r.median_band;
  if (!r.thin_evidence.empty() || t.requests == 0 || b.requests == 0 || b.mean_ns() <= 0) return std::nullopt;
  if (t.mean_ns() < kTailSlowdown * b.mean_ns()) return std::nullopt;
  std::optional<CoTenantCause> best;
  for (const CoTenantOverlap& o : r.co_tenants) {
    const double tail_share = static_cast<double>(o.tail_requests) / t.requests;
    const double band_share = static_cast<double>(o.band_requests) / b.requests;
    if (tail_share < kTailCauseShare || band_share > kConcurrentBandShare) continue;
    if (best && tail_share - band_share <= best->tail_share - best->band_share) continue;
    best = CoTenantCause{&o, tail_share, band_share, t.total_ns ? static_cast<double>(o.tail_ns) / t.total_ns : 0};
  }
  return best;
}

std::optional<ConcurrentCause> concurrent_cause(const RequestLatency& r) {
  const RequestGroup &t = r.tail, &b = r.median_band;
  if (!r.thin_evidence.empty() || t.requests == 0 || b.requests == 0 || b.mean_ns() <= 0) return std::nullopt;
  if (t.mean_ns() < kTailSlowdown * b.mean_ns()) return std::nullopt;
  std::optional<ConcurrentCause> best;
  for (size_t p = 0; p < kRequestParts; ++p) {
    const double tail_share = t.concurrent_request_share(p), band_share = b.concurrent_request_share(p);
    if (tail_share < kTailCauseShare || band_share > kConcurrentBandShare) continue;
    if (best && tail_share - band_share <= best->tail_share - best->band_share) continue;
    best = ConcurrentCause{static_cast<RequestPart>(p), tail_share, band_share,
                           static_cast<double>(t.concurrent_ns[p]) / t.requests};
  }
  return best;
}

std::optional<TailCause> tail_cause(const RequestLatency& r) {
  const RequestGroup &t = r.tail, &b = r.median_band;
  if (!r.thin_evidence.empty() || t.requests == 0 || b.requests == 0 || b.total_ns == 0) return std::nullopt;
  TailCause c;
  c.slowdown = t.mean_ns() / b.mean_ns();
  const double extra = t.mean_ns() - b.mean_ns();
  if (c.slowdown < kTailSlowdown || extra <= 0) return std::nullopt;
  const auto& grew_most = r.tail_grew_most;
  const size_t grew = std::max_element(grew_most.begin(), grew_most.end()) - grew_most.begin();
  c.request_share = static_cast<double>(grew_most[grew]) / t.requests;
  if (c.request_share < kTailCauseShare) return std::nullopt;
  c.growth_share = (t.mean_part_ns(grew) - b.mean_part_ns(grew)) / extra;
  c.part = static_cast<RequestPart>(grew);
  c.median_part = static_cast<RequestPart>(largest_part(b));
  c.differs = c.part != c.median_part;
  return c;
}

// Time outside CUDA on the request's own thread is a blind part: it says
// the request waited, not for what. When another thread was in a CUDA part
// during at least as many of the tail requests (and hardly any of the
// median band's), that thread is the better-evidenced cause, and the own
// thread's wait stays as evidence. Seen on a loaded host: the request thread
// waits off the CPU while a helper churns the allocator.
namespace {
bool other_thread_explains_host_wait(const TailCause& cause, const std::optional<ConcurrentCause>& other) {
  return cause.part == RequestPart::OutsideCuda && other && other->part != RequestPart::OutsideCuda &&
         other->tail_share >= cause.request_share;
}
}  // namespace

// A tail whose own thread grew in another part than the median's is that
// part's finding (other threads' activity, when there is some, as
// evidence); a tail that only waited longer in the median's own part, or in
// no single part, is a finding when other threads were busy during it and
// not during the median band.
void add_tail_finding(const TraceModel& model, Analysis* analysis) {
  const RequestLatency& r = analysis->requests;
  const auto cause = tail_cause(r);
  const auto other = concurrent_cause(r);
  const auto tenant = co_tenant_cause(r);
  if (!(cause && cause->differs) && !other && !tenant) return;
  Finding f;
  if (cause && cause->differs && !other_thread_explains_host_wait(*cause, other)) {
    f.cls = tail_cause_class(cause->part);
    f.title = fmt::format("the slowest \"{}\" requests (above p{:g}) are slow from {}, not from what the median "
                          "spends its time on",
                          r.name, r.tail_quantile * 100, request_part_label(cause->part));
    f.evidence = tail_evidence(r, *cause);
    f.sites = grown_sites(model, r, cause->part);
    f.fix = fix_for(cause->part);
    if (other) f.evidence.push_back(concurrent_line(r, *other));
    // Host time that grew while another thread ran host code: where that thread was.
    if (other && other->part == RequestPart::OutsideCuda && cause->part == RequestPart::OutsideCuda) {
      for (CallSite& site : concurrent_sites(model, r, other->part)) f.sites.push_back(std::move(site));
      f.fix = concurrent_fix_for(other->part);
    }
    if (tenant) f.evidence.push_back(co_tenant_line(r, *tenant));
  } else if (tenant && (!other || tenant->tail_share - tenant->band_share >= other->tail_share - other->band_share)) {
    f = co_tenant_finding(model, r, *tenant, cause);
    if (other) f.evidence.push_back(concurrent_line(r, *other));
  } else {
    f = concurrent_finding(model, r, *other, cause);
    if (tenant) f.evidence.push_back(co_tenant_line(r, *tenant));
  }
  f.id = "requests.tail_cause";
  const double slowdown = r.tail.mean_ns() / r.median_band.mean_ns();
  f.severity = slowdown >= kTailFailSlowdown ? Status::Fail : Status::Warn;
  const double extra_ns = (r.tail.mean_ns() - r.median_band.mean_ns()) * r.tail.requests;
  f.share = model.wall_ns() ? std::min(1.0, extra_ns / static_cast<double>(model.wall_ns())) : 0;
  auto& all = analysis->findings;
  all.insert(std::upper_bound(all.begin(), all.end(), f,
                              [](const Finding& a, const Finding& b) { return a.share > b.share; }),
             std::move(f));
}

}  // namespace gpuscope::analyzer
