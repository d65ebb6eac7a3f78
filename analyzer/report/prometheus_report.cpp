#include "prometheus_report.h"

#include <cmath>

#include <fmt/format.h>

namespace gpuscope::analyzer {
namespace {

struct Family {
  const char* name;
  const char* help;
  const char* type = "gauge";
};

// Exposition order; a family absent from a run (unknown figure) is skipped.
constexpr Family kFamilies[] = {
    {"gpuscope_wall_seconds", "Wall time analyzed (the capture windows' total when windowed)."},
    {"gpuscope_gpu_busy_ratio", "GPU busy share of wall time (device timestamps, else NVML utilization)."},
    {"gpuscope_feeder_time_ratio", "Share of wall time the feeding host thread spent in each kind of CUDA call, or outside CUDA."},
    {"gpuscope_process_cpu_cores", "Process CPU time over wall time."},
    {"gpuscope_copy_bytes", "Bytes copied between host and device, by direction."},
    {"gpuscope_copies", "Host<->device copy calls, by direction."},
    {"gpuscope_copy_bandwidth_bytes_per_second", "Achieved bandwidth of synchronous host<->device copies."},
    {"gpuscope_kernels", "Kernels launched."},
    {"gpuscope_syncs", "Synchronizing CUDA calls."},
    {"gpuscope_allocations", "Device allocations."},
    {"gpuscope_allocation_rate_per_second", "Device allocations per second of wall time."},
    {"gpuscope_live_device_memory_peak_bytes", "Peak live device memory allocated through the hooked calls."},
    {"gpuscope_implicit_sync_calls", "Calls that synchronized without saying so (docs/rules.md, implicit synchronization)."},
    {"gpuscope_dropped_events", "Events gpuscope dropped rather than block the program (figures undercount when > 0)."},
    {"gpuscope_cuda_work", "1 when the process did CUDA work or CUDA failed it; 0 when it did none (no verdict class then)."},
    {"gpuscope_verdict", "1 for the run's verdict class, 0 for the others; absent for a process without CUDA work."},
    {"gpuscope_verdict_share", "Share of wall time the verdict's bottleneck explains."},
    {"gpuscope_verdict_confidence", "Verdict confidence: 0 low, 1 medium, 2 high."},
    {"gpuscope_trace_truncated", "1 when the trace ended without its end record (the run's end is missing)."},
    {"gpuscope_request_latency_seconds",
     "Latency of the requests named by --requests (NVTX ranges): nearest-rank quantiles over the run's closed ones.",
     "summary"},
    {"gpuscope_request_latency_max_seconds", "The slowest request's latency."},
    {"gpuscope_request_unterminated", "Requests still open when the trace ended (no latency; left out of the summary)."},
    {"gpuscope_request_tail_slowdown_ratio",
     "Mean latency of the tail requests (above --tail, default p95) over the median band's (p40-p60)."},
    {"gpuscope_request_tail_cause",
     "Share of the tail requests whose time grew most in this part over the median band; present when the tail has "
     "one cause (docs/rules.md, Requests and tail latency)."},
    {"gpuscope_request_tail_other_threads",
     "Share of the tail requests during which another thread of the process was busy in this part (10 % of the "
     "request or more); present when that was so for half the tail or more and a fifth of the median band or less."},
    {"gpuscope_request_tail_co_tenant",
     "Share of the tail requests during which another process (traced, analyzed together) was busy on the same GPU "
     "(10 % of the request or more); present when that was so for half the tail or more and a fifth of the median "
     "band or less."},
};

// Every class a process that did CUDA work can get; one that did none sets
// none of them, so that a fleet query's count of classes counts GPU processes.
constexpr Bottleneck kClasses[] = {Bottleneck::PcieBound,    Bottleneck::MemoryBound,     Bottleneck::SyncBound,
                                   Bottleneck::CpuBound,     Bottleneck::CpuFallback,     Bottleneck::Healthy,
                                   Bottleneck::Inconclusive, Bottleneck::CudaUnavailable, Bottleneck::TooShort,
                                   Bottleneck::CudaError};

class Collector {
 public:
  Collector(const ReportInput& in, const std::string& job) {
    const auto& s = in.model.summary;
    const std::string exe = s.process ? s.process->exe : "unknown";
    base_ = {{"host", s.process ? s.process->hostname : "unknown"},
             {"exe", exe.substr(exe.rfind('/') + 1)},
             {"pid", s.process ? std::to_string(s.process->pid) : "0"}};
    if (!job.empty()) base_.emplace_back("job", job);
  }
  void add(const char* family, double value, std::vector<std::pair<std::string, std::string>> extra = {}) {
    if (!std::isfinite(value)) return;
    PrometheusSample p{family, base_, value};
    p.labels.insert(p.labels.end(), extra.begin(), extra.end());
    out_.push_back(std::move(p));
  }
  void add(const char* family, const std::optional<double>& value) {
    if (value) add(family, *value);
  }
  void add_suffixed(const char* family, const char* suffix, double value,
                    std::vector<std::pair<std::string, std::string>> extra) {
    if (!std::isfinite(value)) return;
    add(family, value, std::move(extra));
    out_.back().suffix = suffix;
  }
  std::vector<PrometheusSample> take() { return std::move(out_); }

 private:
  std::vector<std::pair<std::string, std::string>> base_;
  std::vector<PrometheusSample> out_;
};

void verdict_samples(const ReportInput& in, Collector& c) {
  const Verdict& v = in.analysis.verdict;
  c.add("gpuscope_cuda_work", is_cuda_verdict(v.cls) ? 1 : 0);
  if (!is_cuda_verdict(v.cls)) return;
  for (Bottleneck b : kClasses) c.add("gpuscope_verdict", b == v.cls ? 1 : 0, {{"class", bottleneck_id(b)}});
  c.add("gpuscope_verdict_share", v.share);
  c.add("gpuscope_verdict_confidence", v.confidence == "high" ? 2 : v.confidence == "medium" ? 1 : 0);
}

// --requests: the latency summary, labeled with the request's name, and the
// tail's cause when tail_cause() names one (the part, its class, whether the
// median's largest part is another; the value is the share of tail requests
// that grew most in it). Without requests measured there is no summary.
void request_samples(const RequestLatency& r, Collector& c) {
  if (!r.requested() || r.count == 0) return;
  const std::vector<std::pair<std::string, std::string>> name{{"request", r.name}};
  const auto with = [&](const char* key, std::string value) {
    auto labels = name;
    labels.emplace_back(key, std::move(value));
    return labels;
  };
  for (const RequestQuantile& q : r.quantiles)
    c.add("gpuscope_request_latency_seconds", q.ns / 1e9, with("quantile", fmt::format("{}", q.quantile)));
  c.add_suffixed("gpuscope_request_latency_seconds", "_sum", r.total_ns / 1e9, name);
  c.add_suffixed("gpuscope_request_latency_seconds", "_count", static_cast<double>(r.count), name);
  c.add("gpuscope_request_latency_max_seconds", r.max_ns / 1e9, name);
  c.add("gpuscope_request_unterminated", static_cast<double>(r.unterminated), name);
  if (!r.thin_evidence.empty() || r.median_band.mean_ns() <= 0) return;
  c.add("gpuscope_request_tail_slowdown_ratio", r.tail.mean_ns() / r.median_band.mean_ns(), name);
  if (const auto other = concurrent_cause(r)) {
    auto labels = with("part", request_part_id(other->part));
    labels.emplace_back("class", bottleneck_id(concurrent_class(other->part)));
    c.add("gpuscope_request_tail_other_threads", other->tail_share, std::move(labels));
  }
  if (const auto tenant = co_tenant_cause(r)) {
    auto labels = with("co_tenant_pid", std::to_string(tenant->tenant->pid));
    labels.emplace_back("co_tenant_exe", tenant->tenant->program());
    c.add("gpuscope_request_tail_co_tenant", tenant->tail_share, std::move(labels));
  }
  const auto cause = tail_cause(r);
  if (!cause) return;
  auto labels = with("part", request_part_id(cause->part));
  labels.emplace_back("class", bottleneck_id(tail_cause_class(cause->part)));
  labels.emplace_back("differs_from_median", cause->differs ? "true" : "false");
  c.add("gpuscope_request_tail_cause", cause->request_share, std::move(labels));
}

}  // namespace

std::string prometheus_escape(const std::string& value) {
  std::string out;
  for (char ch : value) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

std::vector<PrometheusSample> prometheus_samples(const ReportInput& in, const std::string& job) {
  const Metrics& x = in.metrics;
  Collector c(in, job);
  c.add("gpuscope_wall_seconds", x.wall_s);
  c.add("gpuscope_gpu_busy_ratio", x.gpu_util);
  for (size_t k = 0; k < kCallKinds; ++k)
    c.add("gpuscope_feeder_time_ratio", x.feeder_share[k], {{"kind", call_kind_name(static_cast<CallKind>(k))}});
  c.add("gpuscope_feeder_time_ratio", x.feeder_outside_cuda_share, {{"kind", "outside CUDA"}});
  c.add("gpuscope_process_cpu_cores", x.process_cpu_cores);
  c.add("gpuscope_copy_bytes", static_cast<double>(x.h2d_bytes), {{"direction", "h2d"}});
  c.add("gpuscope_copy_bytes", static_cast<double>(x.d2h_bytes), {{"direction", "d2h"}});
  c.add("gpuscope_copies", static_cast<double>(x.h2d_count), {{"direction", "h2d"}});
  c.add("gpuscope_copies", static_cast<double>(x.d2h_count), {{"direction", "d2h"}});
  if (x.achieved_gbps) c.add("gpuscope_copy_bandwidth_bytes_per_second", *x.achieved_gbps * 1e9);  // base units
  c.add("gpuscope_kernels", static_cast<double>(x.kernels));
  c.add("gpuscope_syncs", static_cast<double>(x.syncs));
  c.add("gpuscope_allocations", static_cast<double>(x.allocs));
  c.add("gpuscope_allocation_rate_per_second", x.alloc_rate_per_s);
  c.add("gpuscope_live_device_memory_peak_bytes", static_cast<double>(x.live_peak_bytes));
  c.add("gpuscope_implicit_sync_calls", static_cast<double>(x.implicit_sync_calls));
  c.add("gpuscope_dropped_events", static_cast<double>(x.dropped));
  verdict_samples(in, c);
  c.add("gpuscope_trace_truncated", x.truncated ? 1 : 0);
  request_samples(in.analysis.requests, c);
  return c.take();
}

std::string prometheus_text(const std::vector<PrometheusSample>& samples) {
  std::string out;
  for (const Family& f : kFamilies) {
    bool header = false;
    for (const PrometheusSample& s : samples) {
      if (s.family != f.name) continue;
      if (!header) out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
      header = true;
      std::string labels;
      for (const auto& [k, v] : s.labels) labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", k, prometheus_escape(v));
      out += fmt::format("{}{}{{{}}} {}\n", s.family, s.suffix, labels, s.value);
    }
  }
  return out;
}

}  // namespace gpuscope::analyzer
