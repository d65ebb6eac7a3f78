#include "driver_tenants.h"

#include <algorithm>

namespace gpuscope::analyzer {

void DriverSampleReader::add(const reader::ChunkView& v) {
  for (const fb::ProcessGpuSample& s : v.process_gpu_samples) {
    ++samples_;
    by_pid_[s.pid()].push_back({s.start_ns() - s.window_ns(), s.start_ns(), s.device(), driver_busy_pct(s)});
  }
  add_gpu_process_names(v, &names_);
}

GpuTenants DriverSampleReader::tenants(const reader::TraceSummary& self, const std::vector<int>& traced,
                                       RequestLatency::DriverSamples* status) const {
  status->samples = samples_;
  GpuTenants out;
  if (!self.process) return out;
  const auto own = by_pid_.find(static_cast<uint32_t>(self.process->pid));
  status->named_self = own != by_pid_.end();
  if (!status->named_self) return out;
  std::vector<uint16_t> devices;
  for (const Sample& s : own->second)
    if (std::find(devices.begin(), devices.end(), s.device) == devices.end()) devices.push_back(s.device);
  for (const auto& [pid, samples] : by_pid_) {
    if (own->first == pid || std::find(traced.begin(), traced.end(), static_cast<int>(pid)) != traced.end()) continue;
    GpuTenant t = tenant_of(pid, samples, devices);
    if (t.shares.empty()) continue;
    t.boot_id = self.process->boot_id;
    t.hostname = self.process->hostname;
    out.push_back(std::move(t));
  }
  status->other_processes = out.size();
  std::sort(out.begin(), out.end(), [](const GpuTenant& a, const GpuTenant& b) { return a.pid < b.pid; });
  return out;
}

GpuTenant DriverSampleReader::tenant_of(uint32_t pid, const std::vector<Sample>& samples,
                                        const std::vector<uint16_t>& devices) const {
  GpuTenant t;
  t.pid = static_cast<int>(pid);
  t.busy_from = BusyFrom::DriverSamples;
  if (const auto name = names_.find(pid); name != names_.end()) t.exe = name->second;
  std::vector<Sample> kept;
  for (const Sample& s : samples)
    if (s.share_pct > 0 && s.end > s.start && std::find(devices.begin(), devices.end(), s.device) != devices.end())
      kept.push_back(s);
  std::sort(kept.begin(), kept.end(), [](const Sample& a, const Sample& b) { return a.start < b.start; });
  std::vector<uint64_t> windows;
  for (const Sample& s : kept) {
    // On two of the service's GPUs at once, the earlier sample keeps the overlap.
    const uint64_t start = t.shares.empty() ? s.start : std::max(s.start, t.shares.back().end);
    if (start >= s.end) continue;
    t.shares.push_back({start, s.end, s.share_pct / 100.0});
    windows.push_back(s.end - s.start);
  }
  if (!windows.empty()) {
    std::nth_element(windows.begin(), windows.begin() + windows.size() / 2, windows.end());
    t.sample_window_ns = windows[windows.size() / 2];
  }
  return t;
}

}  // namespace gpuscope::analyzer
