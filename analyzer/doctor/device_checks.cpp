// Per-GPU checks of how the GPU runs: its PCIe link, its clocks and what
// holds them down, its power limit and persistence mode.
#include <iterator>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "checks.h"
#include "nvml_clock_events.h"

namespace gpuscope::doctor {
namespace {

CheckState state_of(nvml::ClockEventSeverity severity) {
  switch (severity) {
    case nvml::ClockEventSeverity::Fail: return CheckState::Fail;
    case nvml::ClockEventSeverity::Warn: return CheckState::Warn;
    case nvml::ClockEventSeverity::Info: return CheckState::Pass;
  }
  return CheckState::Pass;
}

bool is_idle(const NodeProbe& probe, const Gpu& gpu) {
  unsigned long long reasons = 0;
  const auto fn = probe.api.device_get_clocks_event_reasons;
  return fn != nullptr && fn(gpu.handle, &reasons) == nvml::kSuccess && (reasons & 0x1) != 0;
}

Finding judge_link(unsigned gen, unsigned width, unsigned max_gen, unsigned max_width, bool idle) {
  const double share = lane_gbytes_per_s(max_gen) * max_width > 0
                           ? lane_gbytes_per_s(gen) * width / (lane_gbytes_per_s(max_gen) * max_width)
                           : 1;
  const std::string link = fmt::format("link at Gen{} x{}, capable of Gen{} x{} ({:.0f}% of its bandwidth)", gen,
                                       width, max_gen, max_width, 100 * share);
  const char* reseat =
      "reseat the GPU or its riser, check the slot's BIOS link settings, then nvidia-smi -q -d PCIE under load; "
      "a link that stays degraded after a reboot needs the board or riser replaced";
  if (width < max_width) return failed(link + ": it trained narrower than its width", reseat);
  if (gen < max_gen && !idle) return failed(link + " while the GPU is busy", reseat);
  if (gen < max_gen)
    return warned(link + " while the GPU is idle: it may be saving power; re-check under load",
                  "run a copy-heavy workload and run doctor again while it runs");
  return passed(fmt::format("link at Gen{} x{}, its maximum", gen, width));
}

}  // namespace

// Payload gigabytes per second of one lane, per PCIe generation (after
// 8b/10b up to Gen2, 128b/130b from Gen3; Gen6 counted at its raw rate).
double lane_gbytes_per_s(unsigned gen) {
  static constexpr double kRate[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 8.0};
  return gen < std::size(kRate) ? kRate[gen] : 0;
}

Finding check_pcie_link(const NodeProbe& probe, const Gpu& gpu) {
  const nvml::Api& api = probe.api;
  unsigned gen = 0, width = 0, max_gen = 0, max_width = 0;
  NvmlReads read(probe);
  read("nvmlDeviceGetCurrPcieLinkGeneration", api.device_get_curr_pcie_link_generation, gpu.handle, &gen);
  read("nvmlDeviceGetCurrPcieLinkWidth", api.device_get_curr_pcie_link_width, gpu.handle, &width);
  read("nvmlDeviceGetMaxPcieLinkGeneration", api.device_get_max_pcie_link_generation, gpu.handle, &max_gen);
  read("nvmlDeviceGetMaxPcieLinkWidth", api.device_get_max_pcie_link_width, gpu.handle, &max_width);
  if (!read.ok()) return read.not_checked();
  Finding f = judge_link(gen, width, max_gen, max_width, is_idle(probe, gpu));
  unsigned gpu_max_gen = 0;
  if (NvmlReads(probe)("nvmlDeviceGetGpuMaxPcieLinkGeneration", api.device_get_gpu_max_pcie_link_generation,
                       gpu.handle, &gpu_max_gen) &&
      gpu_max_gen > max_gen)
    f = worse(f, warned(fmt::format("the slot caps the link at Gen{}; the GPU can do Gen{}", max_gen, gpu_max_gen),
                        "move the GPU to a slot (or riser) of its generation, or check the BIOS's PCIe speed setting"));
  f.evidence.push_back(fmt::format("current Gen{} x{}, maximum Gen{} x{}{}", gen, width, max_gen, max_width,
                                   gpu_max_gen > 0 ? fmt::format(" (GPU's own maximum Gen{})", gpu_max_gen) : ""));
  if (unsigned replays = 0;
      NvmlReads(probe)("nvmlDeviceGetPcieReplayCounter", api.device_get_pcie_replay_counter, gpu.handle, &replays))
    f.evidence.push_back(fmt::format("PCIe replays since boot: {} (reported, not judged)", replays));
  return f;
}

Finding check_clocks(const NodeProbe& probe, const Gpu& gpu) {
  const nvml::Api& api = probe.api;
  unsigned long long reasons = 0;
  NvmlReads read(probe);
  if (!read("nvmlDeviceGetCurrentClocksEventReasons", api.device_get_clocks_event_reasons, gpu.handle, &reasons))
    return read.not_checked();
  CheckState worst = CheckState::Pass;
  std::string active, holding, fix;
  for (const nvml::ClockEventReason& r : nvml::kClockEventReasons) {
    if ((reasons & r.bit) == 0) continue;
    active += (active.empty() ? "" : ", ") + std::string(r.name);
    const CheckState state = state_of(r.severity);
    if (state == CheckState::Pass) continue;
    holding += (holding.empty() ? "" : ", ") + std::string(r.name);
    if (state < worst) {
      worst = state;
      fix = r.fix;
    }
  }
  Finding f = worst == CheckState::Fail   ? failed("clocks held down by " + holding, fix)
              : worst == CheckState::Warn ? warned("clocks held down by " + holding, fix)
                                          : passed("no clocks event holds the GPU below its settings");
  f.evidence.push_back(fmt::format("clocks event reasons 0x{:x}: {}", reasons, active.empty() ? "none" : active));
  unsigned sm = 0, sm_max = 0, temperature = 0;
  if (NvmlReads both(probe); both("nvmlDeviceGetClockInfo", api.device_get_clock_info, gpu.handle, nvml::kClockSm, &sm) &&
                             both("nvmlDeviceGetMaxClockInfo", api.device_get_max_clock_info, gpu.handle,
                                  nvml::kClockSm, &sm_max))
    f.evidence.push_back(fmt::format("SM clock {} MHz of {} MHz", sm, sm_max));
  if (NvmlReads(probe)("nvmlDeviceGetTemperature", api.device_get_temperature, gpu.handle, nvml::kTemperatureGpu,
                       &temperature))
    f.evidence.push_back(fmt::format("temperature {} C", temperature));
  return f;
}

Finding check_power(const NodeProbe& probe, const Gpu& gpu) {
  const nvml::Api& api = probe.api;
  unsigned enforced_mw = 0, default_mw = 0;
  NvmlReads read(probe);
  read("nvmlDeviceGetEnforcedPowerLimit", api.device_get_enforced_power_limit, gpu.handle, &enforced_mw);
  read("nvmlDeviceGetPowerManagementDefaultLimit", api.device_get_power_management_default_limit, gpu.handle,
       &default_mw);
  if (!read.ok()) return read.not_checked();
  Finding f = enforced_mw < default_mw
                  ? warned(fmt::format("power limit {:.0f} W, below the board's default {:.0f} W", enforced_mw / 1e3,
                                       default_mw / 1e3),
                           "restore the default limit (nvidia-smi -pl) unless the cap is deliberate")
                  : passed(fmt::format("power limit {:.0f} W (default {:.0f} W)", enforced_mw / 1e3, default_mw / 1e3));
  if (unsigned usage_mw = 0;
      NvmlReads(probe)("nvmlDeviceGetPowerUsage", api.device_get_power_usage, gpu.handle, &usage_mw))
    f.evidence.push_back(fmt::format("drawing {:.0f} W", usage_mw / 1e3));
  return f;
}

Finding check_persistence_mode(const NodeProbe& probe, const Gpu& gpu) {
  int mode = 0;
  NvmlReads read(probe);
  if (!read("nvmlDeviceGetPersistenceMode", probe.api.device_get_persistence_mode, gpu.handle, &mode))
    return read.not_checked();
  if (mode == nvml::kEnabled) return passed("persistence mode on");
  return warned("persistence mode off: the driver tears the GPU down when its last client exits, so each new "
                "process pays the initialization again and clocks/ECC state can reset",
                "run nvidia-persistenced (or nvidia-smi -pm 1)");
}

}  // namespace gpuscope::doctor
