#include <algorithm>

#include "metrics.h"

namespace gpuscope::analyzer {

void implicit_sync_metrics(const TraceModel& m, Metrics& x) {
  const ImplicitSyncs& s = m.implicit_syncs;
  for (size_t i = 0; i < kImplicitCauses; ++i) {
    x.implicit_sync_calls += s.causes[i].total.calls;
    if (implicit_cause_info(static_cast<ImplicitCause>(i)).counts_as_blocked)
      x.implicit_sync_host_s += s.causes[i].total.ns / 1e9;
  }
  const auto feeder = s.blocked_ns_by_thread.find(x.feeder_tid);
  if (feeder != s.blocked_ns_by_thread.end() && x.wall_s > 0)
    x.implicit_sync_share = std::min(1.0, feeder->second / 1e9 / x.wall_s);
}

}  // namespace gpuscope::analyzer
