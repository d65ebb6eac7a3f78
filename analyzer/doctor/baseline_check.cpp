// The baseline check: this node's facts (node_facts.h) against those a
// known-good node saved with `gpuscope doctor --json -o FILE`, so the
// difference behind "works on one machine, fails on another" (a driver
// upgrade, a new VBIOS, persistence mode off after a reboot, an H100 where
// the pool has H200s) is named instead of hunted.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checks.h"

namespace gpuscope::doctor {
namespace {

// How many differences the one-line summary names; -v lists them all.
constexpr size_t kSummaryDifferences = 3;

std::string scope_of(const FactDifference& d) { return d.gpu < 0 ? "node" : fmt::format("GPU {}", d.gpu); }

// "driver 580.82.07 -> 570.86.15 (node)", "GPU 1 (NVIDIA H200) is missing".
std::string describe(const FactDifference& d) {
  if (d.name == "gpu") return fmt::format("GPU {} of the baseline ({}) is missing", d.gpu, d.baseline);
  return fmt::format("{} {} {} -> {}", scope_of(d), d.name, d.baseline, d.now);
}

}  // namespace

Finding check_baseline(const NodeProbe& probe) {
  const NodeFacts& baseline = *probe.options.baseline;
  const std::string& file = probe.options.baseline_file;
  std::vector<std::string> differ, unanswered;
  bool hardware_differs = false;  // a Drift::Fail difference
  for (const FactDifference& d : compare_facts(baseline, probe.facts)) {
    if (d.now.empty() && d.name != "gpu") {
      unanswered.push_back(fmt::format("{} {}: the baseline has {}; this node does not answer it (not compared)",
                                       scope_of(d), d.name, d.baseline));
      continue;
    }
    differ.push_back(describe(d));
    hardware_differs = hardware_differs || d.drift == Drift::Fail;
  }
  size_t facts = baseline.node.size();
  for (const GpuFacts& g : baseline.gpus) facts += g.facts.size();
  Finding f;
  if (differ.empty()) {
    f = passed(fmt::format("matches the baseline {} ({} facts of the node and {} GPU{})", file, facts,
                           baseline.gpus.size(), baseline.gpus.size() == 1 ? "" : "s"));
  } else {
    std::string summary = fmt::format("{} difference{} from the baseline: ", differ.size(), differ.size() == 1 ? "" : "s");
    for (size_t i = 0; i < differ.size() && i < kSummaryDifferences; ++i) summary += (i ? "; " : "") + differ[i];
    if (differ.size() > kSummaryDifferences) summary += fmt::format("; and {} more (-v)", differ.size() - kSummaryDifferences);
    const std::string fix = fmt::format(
        "bring this node to the baseline's configuration (driver, firmware, settings, hardware), or, when the "
        "change is intended, save a new baseline on a known-good node with `gpuscope doctor --json -o {}`",
        file);
    f = hardware_differs ? failed(summary, fix) : warned(summary, fix);
  }
  for (std::string& d : differ) f.evidence.push_back("differs: " + std::move(d));
  for (std::string& u : unanswered) f.evidence.push_back(std::move(u));
  return f;
}

}  // namespace gpuscope::doctor
