// The REQUESTS section and the JSON "requests" member (--requests): latency
// quantiles per request, the slowest requests, and the tail against the
// median band part by part (request_latency.h, rules/tail_rules.cpp).
#include <algorithm>

#include <fmt/format.h>

#include "profiler_windows.h"
#include "report.h"
#include "units.h"

namespace gpuscope::analyzer {
namespace {

using json = nlohmann::ordered_json;

uint64_t process_origin(const reader::TraceSummary& s) {
  return s.process && s.process->start_monotonic_ns != 0 ? s.process->start_monotonic_ns : s.first_ns;
}

double seconds_since(uint64_t origin, uint64_t ns) { return ns >= origin ? (ns - origin) / 1e9 : 0; }

// Other threads busy during the tail and not the median band, or "".
std::string concurrent_sentence(const RequestLatency& r) {
  const auto c = concurrent_cause(r);
  if (!c) return "";
  return fmt::format("; meanwhile another thread of the process was in {} during {} of the tail requests and {} of "
                     "the median band's ({:.3f} ms inside each tail request)",
                     concurrent_part_label(c->part), pct(c->tail_share), pct(c->band_share), c->overlap_ns / 1e6);
}

std::string own_cause_line(const RequestLatency& r) {
  const auto cause = tail_cause(r);
  if (!cause) {
    const double slowdown = r.median_band.mean_ns() > 0 ? r.tail.mean_ns() / r.median_band.mean_ns() : 0;
    if (slowdown < kTailSlowdown)
      return fmt::format("no tail to explain: the tail is {:.2f}x the median band (explained from {:g}x)", slowdown,
                         kTailSlowdown);
    return fmt::format("no single part is where {} of the tail requests grew most", pct(kTailCauseShare));
  }
  if (!cause->differs)
    return fmt::format("the tail is more of the median's own largest part, {} ({} of the tail requests grew most "
                       "there, {:.1f}x slower)",
                       request_part_label(cause->part), pct(cause->request_share), cause->slowdown);
  return fmt::format("the tail's cause differs from the median's: {} ({} of the tail requests grew most there, {} of "
                     "its extra time, {:.1f}x slower; the median band's largest part is {}): see finding "
                     "requests.tail_cause",
                     request_part_label(cause->part), pct(cause->request_share), pct(cause->growth_share),
                     cause->slowdown, request_part_label(cause->median_part));
}

// Another process on the GPU busy during the tail and not the median band, or "".
std::string co_tenant_sentence(const RequestLatency& r) {
  const auto c = co_tenant_cause(r);
  if (!c) return "";
  return fmt::format("; meanwhile {} on the same GPU was busy during {} of the tail requests and {} of the median "
                     "band's ({} of the tail's time)",
                     c->tenant->name(), pct(c->tail_share), pct(c->band_share), pct(c->held_share));
}

std::string cause_line(const RequestLatency& r) {
  if (!r.thin_evidence.empty()) return "evidence too thin to compare the tail: " + r.thin_evidence;
  return own_cause_line(r) + concurrent_sentence(r) + co_tenant_sentence(r);
}

// Co-tenants whose busy time came from their own traces, not the driver's samples.
size_t traced_co_tenants(const RequestLatency& r) {
  return static_cast<size_t>(std::count_if(r.co_tenants.begin(), r.co_tenants.end(), [](const CoTenantOverlap& o) {
    return o.busy_from != BusyFrom::DriverSamples;
  }));
}

// What the driver's per-process samples added, or why they could not.
std::string driver_samples_clause(const RequestLatency& r) {
  const RequestLatency::DriverSamples& d = r.driver_samples;
  if (d.samples == 0)
    return "; the driver's per-process samples (NVML) are not in this trace (no NVML, a driver without them, or "
           "--nvml-hz 0)";
  if (!d.named_self)
    return fmt::format("; the driver's {} per-process samples never named this process's pid (it runs in another "
                       "pid namespace, such as a container), so they are not used",
                       d.samples);
  const size_t untraced = r.co_tenants.size() - traced_co_tenants(r);
  return fmt::format("; the driver's per-process samples (NVML) named {} other process(es) on its GPU, {} of them "
                     "busy during the compared requests",
                     d.other_processes, untraced);
}

// Which other processes were looked at: the blind spot when none were.
std::string other_processes_line(const RequestLatency& r) {
  const size_t traced = traced_co_tenants(r);
  std::string line;
  if (r.other_traces == 0)
    line = "other processes on the GPU: not seen in traces (none given with this one; trace them in the same gpuscope "
           "run, or give their traces, for their exact busy time)";
  else if (traced == 0)
    line = fmt::format("other processes on the GPU: none of the {} other trace(s) given was busy on this GPU during "
                       "the compared requests (same boot, same GPU UUID)",
                       r.other_traces);
  else
    line = fmt::format("other processes on the GPU: {} of the {} other trace(s) given were busy on it during the "
                       "compared requests",
                       traced, r.other_traces);
  return line + driver_samples_clause(r);
}

void co_tenant_rows(std::string& out, const RequestLatency& r) {
  const RequestGroup &t = r.tail, &b = r.median_band;
  for (const CoTenantOverlap& o : r.co_tenants) {
    out += fmt::format("    {:<64} {:>10.3f} {:>10.3f}\n", fmt::format("co-tenant {} busy on the GPU, inside", o.name()),
                       t.per_request(o.tail_ns) / 1e6, b.per_request(o.band_ns) / 1e6);
    out += fmt::format("    {:<64} {:>10} {:>10}\n",
                       fmt::format("requests with {} busy >= {} of them", o.name(), pct(kCoTenantShare)),
                       pct(t.per_request(o.tail_requests)), pct(b.per_request(o.band_requests)));
  }
}

void comparison_table(std::string& out, const RequestLatency& r) {
  const RequestGroup &t = r.tail, &b = r.median_band;
  out += fmt::format("  per request, tail (above {}, {} requests) against median band ({}-{}, {} requests):\n",
                     quantile_name(r.tail_quantile), t.requests, quantile_name(kMedianBandLow),
                     quantile_name(kMedianBandHigh), b.requests);
  out += fmt::format("    {:<64} {:>10} {:>10}\n", "", "tail ms", "median ms");
  out += fmt::format("    {:<64} {:>10.3f} {:>10.3f}\n", "whole request", t.mean_ns() / 1e6, b.mean_ns() / 1e6);
  for (size_t p = 0; p < kRequestParts; ++p) {
    if (t.part_ns[p] == 0 && b.part_ns[p] == 0) continue;
    out += fmt::format("    {:<64} {:>10.3f} {:>10.3f}\n", request_part_label(static_cast<RequestPart>(p)),
                       t.mean_part_ns(p) / 1e6, b.mean_part_ns(p) / 1e6);
  }
  const auto each = [](const RequestGroup& g, uint64_t total) { return g.per_request(total); };
  out += fmt::format("    {:<64} {:>10.1f} {:>10.1f}\n", "KiB copied", each(t, t.copied_bytes) / 1024,
                     each(b, b.copied_bytes) / 1024);
  out += fmt::format("    {:<64} {:>10.1f} {:>10.1f}\n", "kernels", each(t, t.kernels), each(b, b.kernels));
  if (r.device_records)
    for (const auto& [label, kind] : {std::pair{"device time: kernels", &RequestGroup::device_kernel_ns},
                                      std::pair{"device time: copies", &RequestGroup::device_copy_ns},
                                      std::pair{"device time: memsets", &RequestGroup::device_memset_ns}})
      out += fmt::format("    {:<64} {:>10.3f} {:>10.3f}\n", label, each(t, t.*kind) / 1e6, each(b, b.*kind) / 1e6);
  for (size_t p = 0; p < kRequestParts; ++p) {
    if (t.concurrent_ns[p] == 0 && b.concurrent_ns[p] == 0) continue;
    const bool cpu = static_cast<RequestPart>(p) == RequestPart::OutsideCuda;
    const char* id = cpu ? "host code on the CPU" : request_part_id(static_cast<RequestPart>(p));
    out += fmt::format("    {:<64} {:>10.3f} {:>10.3f}\n", fmt::format("other threads' {}, inside the request", id),
                       each(t, t.concurrent_ns[p]) / 1e6, each(b, b.concurrent_ns[p]) / 1e6);
    out += fmt::format("    {:<64} {:>10} {:>10}\n",
                       fmt::format("requests with other threads' {} >= {} of them", id, pct(kConcurrentShare)),
                       pct(t.concurrent_request_share(p)), pct(b.concurrent_request_share(p)));
  }  co_tenant_rows(out, r);
}

json group_json(const RequestGroup& g, bool device_records) {
  json parts = json::object(), concurrent = json::object(), busy = json::object();
  const auto each = [&](uint64_t total) { return g.per_request(total); };
  for (size_t p = 0; p < kRequestParts; ++p) {
    const char* id = request_part_id(static_cast<RequestPart>(p));
    parts[id] = g.mean_part_ns(p) / 1e9;
    if (g.concurrent_ns[p] == 0) continue;
    concurrent[id] = each(g.concurrent_ns[p]) / 1e9;
    busy[id] = g.concurrent_requests[p];
  }
  return json{{"requests", g.requests},     {"mean_s", g.mean_ns() / 1e9},
              {"parts_s", parts},           {"copied_bytes", each(g.copied_bytes)},
              {"kernels", each(g.kernels)}, {"cuda_calls", each(g.cuda_calls)},
              {"other_threads_s", concurrent}, {"other_threads_busy_requests", busy},
              {"device_s", device_records ? json{{"kernels", each(g.device_kernel_ns) / 1e9},
                                                 {"copies", each(g.device_copy_ns) / 1e9},
                                                 {"memsets", each(g.device_memset_ns) / 1e9}}
                                          : json(nullptr)}};
}

json concurrent_json(const RequestLatency& r) {
  const auto c = concurrent_cause(r);
  if (!c) return nullptr;
  return json{{"part", request_part_id(c->part)},
              {"tail_share", c->tail_share},
              {"median_share", c->band_share},
              {"overlap_s", c->overlap_ns / 1e9}};
}

json co_tenants_json(const RequestLatency& r) {
  json out = json::array();
  for (const CoTenantOverlap& o : r.co_tenants)
    out.push_back(json{{"pid", o.pid},
                       {"exe", o.exe},
                       {"trace", o.trace},
                       {"busy_from", busy_from_name(o.busy_from)},
                       {"sample_window_s", o.sample_window_ns / 1e9},
                       {"trace_damaged", o.damaged},
                       {"tail_busy_s", r.tail.per_request(o.tail_ns) / 1e9},
                       {"median_busy_s", r.median_band.per_request(o.band_ns) / 1e9},
                       {"tail_busy_requests", o.tail_requests},
                       {"median_busy_requests", o.band_requests}});
  return out;
}

json co_tenant_cause_json(const RequestLatency& r) {
  const auto c = co_tenant_cause(r);
  if (!c) return nullptr;
  return json{{"pid", c->tenant->pid},
              {"exe", c->tenant->exe},
              {"tail_share", c->tail_share},
              {"median_share", c->band_share},
              {"tail_time_share", c->held_share}};
}

json cause_json(const RequestLatency& r) {
  const auto cause = tail_cause(r);
  if (!cause) return nullptr;
  return json{{"part", request_part_id(cause->part)},
              {"median_part", request_part_id(cause->median_part)},
              {"slowdown", cause->slowdown},
              {"request_share", cause->request_share},
              {"growth_share", cause->growth_share},
              {"differs", cause->differs}};
}

}  // namespace

std::string requests_text(const ReportInput& in) {
  const RequestLatency& r = in.analysis.requests;
  if (!r.requested()) return "";
  std::string each = "a range with that message (NVTX, or an imported trace's annotation)";
  if (r.name == kProfilerApiRequests) each = "a cudaProfilerStart->cudaProfilerStop window";
  else if (const std::string_view prefix = range_name_prefix(r.name); !prefix.empty())
    each = fmt::format("a range whose message starts with \"{}\"", prefix);
  std::string out = fmt::format("REQUESTS \"{}\" ({} request(s), each {}; nearest-rank quantiles)\n", r.name, r.count,
                                each);
  std::string line;
  for (const RequestQuantile& q : r.quantiles) line += fmt::format("{} {:.3f} ms, ", quantile_name(q.quantile), q.ns / 1e6);
  out += fmt::format("  {}max {:.3f} ms\n", line, r.max_ns / 1e6);
  const uint64_t origin = process_origin(in.model.summary);
  for (const SlowRequest& s : r.slowest)
    out += fmt::format("  slow: {:.3f} ms at {:.6f} s (thread {})\n", s.duration_ns / 1e6, seconds_since(origin, s.start_ns),
                       s.tid);
  if (r.unterminated > 0)
    out += fmt::format("  {} request(s) still open at the end of the trace were left out\n", r.unterminated);
  if (r.overlap_lookups_cut > 0)
    out += fmt::format("  {} call(s) of other threads overlapped more than {} requests in flight; the earliest-started "
                       "of those requests do not count them\n",
                       r.overlap_lookups_cut, kOverlapLookback);
  if (r.thin_evidence.empty()) comparison_table(out, r);
  if (r.thin_evidence.empty()) out += "  " + other_processes_line(r) + "\n";
  out += "  " + cause_line(r) + "\n\n";
  return out;
}

nlohmann::ordered_json requests_json(const ReportInput& in) {
  const RequestLatency& r = in.analysis.requests;
  if (!r.requested()) return nullptr;
  json quantiles = json::array();
  for (const RequestQuantile& q : r.quantiles) quantiles.push_back(json{{"quantile", q.quantile}, {"seconds", q.ns / 1e9}});
  const uint64_t origin = process_origin(in.model.summary);
  json slowest = json::array();
  for (const SlowRequest& s : r.slowest)
    slowest.push_back(json{{"start_s", seconds_since(origin, s.start_ns)}, {"seconds", s.duration_ns / 1e9}, {"tid", s.tid}});
  json histogram = json::array();
  for (const LatencyBin& b : r.histogram)
    histogram.push_back(json{{"from_s", b.from_ns / 1e9}, {"to_s", b.to_ns / 1e9}, {"count", b.count}});
  return json{{"name", r.name},
              {"count", r.count},
              {"unterminated", r.unterminated},
              {"quantile_method", "nearest_rank"},
              {"quantiles", quantiles},
              {"max_s", r.max_ns / 1e9},
              {"slowest", slowest},
              {"histogram", histogram},
              {"tail_quantile", r.tail_quantile},
              {"tail_from_s", r.tail_from_ns / 1e9},
              {"median_band", json::array({kMedianBandLow, kMedianBandHigh})},
              {"thin_evidence", r.thin_evidence.empty() ? json(nullptr) : json(r.thin_evidence)},
              {"tail", group_json(r.tail, r.device_records)},
              {"median", group_json(r.median_band, r.device_records)},
              {"device_links_over_limit", r.device_links_over_limit},
              {"tail_cause", cause_json(r)},
              {"other_threads_cause", concurrent_json(r)},
              {"overlap_lookups_cut", r.overlap_lookups_cut},
              {"other_traces", r.other_traces},
              {"co_tenants", co_tenants_json(r)},
              {"driver_samples", json{{"samples", r.driver_samples.samples},
                                      {"named_self", r.driver_samples.named_self},
                                      {"other_processes", r.driver_samples.other_processes}}},
              {"co_tenant_cause", co_tenant_cause_json(r)},
              {"tail_summary", cause_line(r)}};
}

}  // namespace gpuscope::analyzer
