// What the trace says of the GPUs' links, from the device descriptions taken
// at the start of capture: the PCIe link (current and maximum) that copies
// are judged against, and NVLinks that were down (gpuscope doctor's checks
// of the same facts: docs/doctor.md).
#include <fmt/format.h>

#include "metrics.h"

namespace gpuscope::analyzer {
namespace {

std::string link_text(int gen, int width) { return gen > 0 && width > 0 ? fmt::format("Gen{} x{}", gen, width) : ""; }

}  // namespace

double pcie_gbps(int generation, int width) {
  // Per lane, one direction, after line coding (8b/10b to Gen2, 128b/130b after).
  static constexpr double kLaneGbps[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
  if (generation <= 0 || generation > 6 || width <= 0) return 0;
  return kLaneGbps[generation] * width;
}

void node_link_metrics(const TraceModel& m, Metrics& x) {
  if (!m.summary.devices.empty()) {
    const auto& d = m.summary.devices.front();
    const double cur = pcie_gbps(d.pcie_gen_current, d.pcie_width_current);
    const double max = pcie_gbps(d.pcie_gen_max, d.pcie_width_max);
    if (cur > 0) x.link_gbps = cur;
    if (max > 0) x.link_max_gbps = max;
    x.link_text = link_text(d.pcie_gen_current, d.pcie_width_current);
    x.link_max_text = link_text(d.pcie_gen_max, d.pcie_width_max);
  }
  for (const container::DeviceDescription& d : m.summary.devices)
    if (d.nvlinks_active != 0 && d.nvlinks_active < d.nvlinks)
      x.nvlinks_down.push_back(fmt::format("GPU {}: {} of {} NVLinks down", d.index, d.nvlinks - d.nvlinks_active,
                                           d.nvlinks));
}

}  // namespace gpuscope::analyzer
