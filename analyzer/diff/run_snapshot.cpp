#include "run_snapshot.h"

#include <fmt/format.h>

namespace gpuscope::analyzer {
namespace {

void put(RunSnapshot& s, const char* name, std::optional<double> v) {
  if (v) s.figures[name] = *v;
}

void host_figures(const Metrics& x, RunSnapshot& s) {
  const auto share = [&](CallKind k) { return x.feeder_share[static_cast<size_t>(k)]; };
  put(s, "wall", x.wall_s);
  put(s, "gpu_busy", x.gpu_util);
  put(s, "sync_share", share(CallKind::Sync));
  put(s, "copy_share", share(CallKind::Copy));
  put(s, "launch_share", share(CallKind::Launch));
  put(s, "alloc_share", share(CallKind::Alloc) + share(CallKind::Free));
  put(s, "outside_cuda_share", x.feeder_outside_cuda_share);
  put(s, "process_cpu", x.process_cpu_cores);
}

void device_figures(const Metrics& x, RunSnapshot& s) {
  put(s, "h2d_bytes", static_cast<double>(x.h2d_bytes));
  put(s, "d2h_bytes", static_cast<double>(x.d2h_bytes));
  put(s, "h2d_copies", static_cast<double>(x.h2d_count));
  put(s, "d2h_copies", static_cast<double>(x.d2h_count));
  put(s, "copy_gbps", x.achieved_gbps);
  put(s, "kernels", static_cast<double>(x.kernels));
  put(s, "launches", static_cast<double>(x.launches));
  put(s, "syncs", static_cast<double>(x.syncs));
  put(s, "allocs", static_cast<double>(x.allocs));
  put(s, "alloc_rate", x.alloc_rate_per_s);
  put(s, "live_peak_bytes", static_cast<double>(x.live_peak_bytes));
  put(s, "dropped", static_cast<double>(x.dropped));
}

std::string join_devices(const reader::TraceSummary& t, std::string (*field)(const container::DeviceDescription&)) {
  std::string out;
  for (const auto& d : t.devices) out += (out.empty() ? "" : ", ") + field(d);
  return out.empty() ? "unknown" : out;
}

void environment(const ReportInput& in, RunSnapshot& s) {
  const Metrics& x = in.metrics;
  const reader::TraceSummary& t = in.model.summary;
  auto& env = s.environment;
  env["driver"] = x.driver_version.empty() ? "unknown" : x.driver_version;
  env["runtime"] = "unknown";
  for (const auto& lib : x.loaded_gpu_libraries)
    if (lib.find("libcudart") != std::string::npos) env["runtime"] = lib;
  env["cupti"] = "not used";
  if (t.device_collection && t.device_collection->cupti_version != 0)
    env["cupti"] = fmt::format("{}", t.device_collection->cupti_version);
  env["gpu"] = join_devices(t, [](const container::DeviceDescription& d) { return d.name; });
  env["pcie_link"] = join_devices(t, [](const container::DeviceDescription& d) {
    return d.pcie_gen_current ? fmt::format("Gen{} x{}", d.pcie_gen_current, d.pcie_width_current)
                              : std::string("unknown");
  });
  env["mig"] = join_devices(t, [](const container::DeviceDescription& d) {
    if (d.mig_mode > 0 && !d.mig_devices.empty()) return "on (" + d.mig_devices + ")";
    return std::string(d.mig_mode < 0 ? "unknown" : d.mig_mode ? "on" : "off");
  });
  env["nvlinks"] = join_devices(t, [](const container::DeviceDescription& d) {
    return d.nvlinks ? fmt::format("{} of {} up", d.nvlinks_active, d.nvlinks) : std::string("none");
  });
  env["vbios"] = join_devices(t, [](const container::DeviceDescription& d) {
    return d.vbios.empty() ? std::string("unknown") : d.vbios;
  });
  env["power_limit"] = join_devices(t, [](const container::DeviceDescription& d) {
    return d.power_limit_mw ? fmt::format("{} W", d.power_limit_mw / 1000) : std::string("unknown");
  });
  env["persistence_mode"] = join_devices(t, [](const container::DeviceDescription& d) {
    return std::string(d.persistence_mode < 0 ? "unknown" : d.persistence_mode ? "on" : "off");
  });
  env["visible_devices"] = x.visible_devices ? "'" + *x.visible_devices + "'" : "unset";
}

// --requests: count, quantiles (nearest rank, as `analyze` gives them), the
// maximum and the tail's slowdown over the median band, and the tail's cause.
void request_figures(const RequestLatency& r, RunSnapshot& s) {
  if (!r.requested()) return;
  s.requests = r.name;
  put(s, "requests", static_cast<double>(r.count));
  if (r.count == 0) return;
  for (const RequestQuantile& q : r.quantiles) put(s, quantile_name(q.quantile).c_str(), q.ns / 1e9);
  put(s, "max_latency", r.max_ns / 1e9);
  if (!r.thin_evidence.empty()) {
    s.tail_cause = "not judged";
    return;
  }
  if (r.median_band.mean_ns() > 0) put(s, "tail_slowdown", r.tail.mean_ns() / r.median_band.mean_ns());
  const auto cause = tail_cause(r);
  s.tail_cause = cause ? request_part_id(cause->part) : "none";
  if (const auto other = concurrent_cause(r)) s.tail_cause += std::string(" while other threads: ") + request_part_id(other->part);
}

// A call site by what a person recognizes in both runs: the CUDA function
// and the program's frame that called it (stack ids differ between traces).
std::string site_label(const ReportInput& in, const SiteKey& key) {
  std::string label = in.model.summary.name_of(key.function_id);
  if (key.stack_id == 0) return label + " (no stack recorded)";
  const std::string caller = in.symbols.caller_text(key.stack_id);
  return caller.empty() ? label : label + " at " + caller;
}

}  // namespace

const std::vector<FigureSpec>& figure_specs() {
  using U = FigureUnit;
  static const std::vector<FigureSpec> specs = {
      {"wall", "wall time", U::Seconds},
      {"gpu_busy", "GPU busy", U::Share},
      {"sync_share", "feeder blocked in syncs", U::Share},
      {"copy_share", "feeder blocked in copies", U::Share},
      {"launch_share", "feeder in launches", U::Share},
      {"alloc_share", "feeder in malloc/free", U::Share},
      {"outside_cuda_share", "feeder outside CUDA", U::Share},
      {"process_cpu", "process CPU", U::Cores},
      {"h2d_bytes", "host-to-device bytes", U::Bytes},
      {"d2h_bytes", "device-to-host bytes", U::Bytes},
      {"h2d_copies", "host-to-device copies", U::Count},
      {"d2h_copies", "device-to-host copies", U::Count},
      {"copy_gbps", "synchronous copy bandwidth", U::GBps},
      {"kernels", "kernels", U::Count},
      {"launches", "launches", U::Count},
      {"syncs", "synchronizations", U::Count},
      {"allocs", "allocations", U::Count},
      {"alloc_rate", "allocation rate", U::Rate},
      {"live_peak_bytes", "peak live device memory", U::Bytes},
      {"dropped", "dropped events", U::Count},
      {"requests", "requests", U::Count, true},
      {"p50", "request p50", U::Latency, true},
      {"p90", "request p90", U::Latency, true},
      {"p95", "request p95", U::Latency, true},
      {"p99", "request p99", U::Latency, true},
      {"p99.9", "request p99.9", U::Latency, true},
      {"max_latency", "slowest request", U::Latency, true},
      {"tail_slowdown", "tail / median band", U::Ratio, true},
  };
  return specs;
}

const FigureSpec* find_figure(const std::string& name) {
  for (const FigureSpec& f : figure_specs())
    if (name == f.name) return &f;
  return nullptr;
}

const std::vector<std::string>& environment_keys() {
  static const std::vector<std::string> keys = {"driver", "runtime", "cupti", "gpu", "pcie_link", "mig",
                                                "visible_devices"};
  return keys;
}

std::optional<double> RunSnapshot::figure(const std::string& name) const {
  const auto it = figures.find(name);
  return it == figures.end() ? std::nullopt : std::optional<double>(it->second);
}

RunSnapshot snapshot_of(const ReportInput& in) {
  RunSnapshot s;
  s.path = in.trace_path;
  const auto& t = in.model.summary;
  s.program = t.process ? t.process->exe : "unknown program";
  s.pid = t.process ? t.process->pid : 0;
  s.verdict_class = bottleneck_id(in.analysis.verdict.cls);
  s.verdict_headline = in.analysis.verdict.headline;
  host_figures(in.metrics, s);
  device_figures(in.metrics, s);
  for (const auto& [name, n] : in.model.kernels_by_name) s.kernels[demangle(name.c_str())] += n;
  for (const auto& [key, site] : in.model.sites) {
    SiteTotal& total = s.call_sites[site_label(in, key)];
    total.count += site.calls.count;
    total.seconds += site.calls.ns / 1e9;
  }
  request_figures(in.analysis.requests, s);
  environment(in, s);
  for (const auto& line : in.analysis.coverage)
    if (line.starts_with("dropped events: ") && line != "dropped events: none") s.blind_spots.push_back(line);
    else if (line.starts_with("trace: ") && line != "trace: complete") s.blind_spots.push_back(line);
  return s;
}

}  // namespace gpuscope::analyzer
