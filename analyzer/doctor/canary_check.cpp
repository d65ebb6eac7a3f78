// The canary check (--canary): what one GPU actually moves and launches,
// against what its PCIe link can carry (canary.h runs the test).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "canary.h"
#include "checks.h"

namespace gpuscope::doctor {
namespace {

// Pinned copies below these shares of the link's payload rate: a healthy
// Gen4/Gen5 x16 GPU reaches 80-90 % (NVIDIA's bandwidthTest; docs/doctor.md).
constexpr double kPinnedFailShare = 0.30, kPinnedWarnShare = 0.60;
// An empty kernel's launch and synchronization: a few microseconds on a
// healthy node; ten times that means the host or the driver is the delay.
constexpr double kLaunchWarnUs = 50;

std::string gbps(double v) { return fmt::format("{:.1f} GB/s", v); }

}  // namespace

Finding check_canary(const NodeProbe& probe, const Gpu& gpu) {
  const nvml::Api& api = probe.api;
  unsigned max_gen = 0, max_width = 0;
  NvmlReads read(probe);
  read("nvmlDeviceGetMaxPcieLinkGeneration", api.device_get_max_pcie_link_generation, gpu.handle, &max_gen);
  read("nvmlDeviceGetMaxPcieLinkWidth", api.device_get_max_pcie_link_width, gpu.handle, &max_width);
  if (!read.ok()) return read.not_checked();
  const double link = lane_gbytes_per_s(max_gen) * max_width;
  if (link <= 0) return not_checked(fmt::format("no payload rate known for a Gen{} x{} link", max_gen, max_width));
  const CanaryFigures c = run_canary(gpu.bus_id);
  if (!c.error.empty()) return not_checked("the canary could not run: " + c.error);
  const double pinned = std::min(c.h2d_pinned_gbps, c.d2h_pinned_gbps);
  const double share = pinned / link;
  const std::string copies = fmt::format("pinned copies {} host-to-device, {} device-to-host: {:.0f}% of the Gen{} x{} "
                                         "link's {}",
                                         gbps(c.h2d_pinned_gbps), gbps(c.d2h_pinned_gbps), 100 * share, max_gen,
                                         max_width, gbps(link));
  const std::string launch = c.launch_error.empty()
                                 ? fmt::format("empty-kernel launch and synchronize {:.1f} us", c.launch_us)
                                 : "empty-kernel launch not measured: " + c.launch_error;
  const char* slow_copies =
      "copies run far below the link: check the link under load (pcie_link), the GPU's NUMA placement (topology), "
      "IOMMU or ATS settings and other traffic on the switch; NVIDIA's bandwidthTest or nvbandwidth confirm it";
  Finding f = share < kPinnedFailShare   ? failed(copies, slow_copies)
              : share < kPinnedWarnShare ? warned(copies, slow_copies)
                                         : passed(copies + "; " + launch);
  if (c.launch_us > kLaunchWarnUs)
    f = worse(std::move(f), warned(launch + ": ten times a healthy node's",
                                   "look for CPU contention (host_pressure), a driver without persistence mode, or "
                                   "another process holding the GPU (tenancy)"));
  f.evidence.push_back(fmt::format("pinned: host-to-device {}, device-to-host {}", gbps(c.h2d_pinned_gbps),
                                   gbps(c.d2h_pinned_gbps)));
  f.evidence.push_back(fmt::format("pageable: host-to-device {}, device-to-host {} (staged through the driver's "
                                   "pinned buffers: reported, not judged)",
                                   gbps(c.h2d_pageable_gbps), gbps(c.d2h_pageable_gbps)));
  f.evidence.push_back(c.launch_error.empty() ? fmt::format("{}, the median of {}", launch, c.launches) : launch);
  f.evidence.push_back(fmt::format("each copy {} MiB (sized to take about 10 ms), the best of {} after a warm-up, "
                                   "timed by CUDA events; the link's payload rate from its maximum generation and "
                                   "width (NVML)",
                                   c.copy_bytes >> 20, c.repetitions));
  if (gpu.name.find("(simulated)") != std::string::npos)
    f.evidence.push_back("simulated GPU: simgpu moves the bytes with the host's memcpy, so its copies cannot beat the "
                         "host's memory bandwidth (a few GB/s on a small VM): a fast simulated link reads low");
  return f;
}

}  // namespace gpuscope::doctor
