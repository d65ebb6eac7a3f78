// Helpers shared by the rule files (rules.cpp: data movement, sync and
// memory; host_rules.cpp: CPU, launch and fallback; verdict.cpp: checks,
// verdict and coverage).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "rules.h"
#include "units.h"

namespace gpuscope::analyzer {

inline double kind_share(const Metrics& x, CallKind k) { return x.feeder_share[static_cast<size_t>(k)]; }
inline Status share_status(double share, double fail, double warn) {
  return share >= fail ? Status::Fail : share >= warn ? Status::Warn : Status::Pass;
}

// The call sites of the given kinds of call that cost the most host time.
std::vector<CallSite> top_sites(const TraceModel& m, std::initializer_list<CallKind> kinds, size_t n = 3);

// CPU-bound evidence from the CPU stack samples: the hottest host stacks and
// the host costs their innermost frames name (host_stacks.cpp). False when
// the trace has no samples.
bool cite_host_samples(const TraceModel& m, Finding* f);

std::vector<Finding> data_movement_findings(const TraceModel& m, const Metrics& x);
std::vector<Finding> host_findings(const TraceModel& m, const Metrics& x);
// sync_rules.cpp: calls that synchronized without saying so.
std::optional<Finding> implicit_sync_finding(const TraceModel& m, const Metrics& x);

}  // namespace gpuscope::analyzer
