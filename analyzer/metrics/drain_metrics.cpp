// What the GPU did after each wait on queued kernels (docs/rules.md, "Waits
// that empty the GPU's queue"): the device's idle after a wait that
// emptied its queue is time host and GPU could have overlapped.
#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "metrics.h"

namespace gpuscope::analyzer {
namespace {

// Whether [from, to] lies in what is analyzed and, with sampled device
// tracing, in one device window (outside them the device's idle is unknown).
bool judged_span(const TraceModel& m, uint64_t from, uint64_t to) {
  const auto within = [&](const std::vector<std::pair<uint64_t, uint64_t>>& spans) {
    const auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(from, UINT64_MAX));
    return it != spans.begin() && std::prev(it)->first <= from && to <= std::prev(it)->second;
  };
  if (from < m.begin_ns || to > m.end_ns) return false;
  if (!m.scope_spans.empty() && !within(m.scope_spans)) return false;
  return m.device_windows.empty() || within(m.device_windows);
}

}  // namespace

// A wait on queued kernels returns when the GPU has run out of work. If the
// GPU then idles until the host queues more, the wait serialized the two:
// the host could have queued the next work while the GPU finished. The
// device's last operation may end a little after the wait's return on the
// host clock (the clocks are converted), hence kDrainSkewNs.
void drain_metrics(const TraceModel& m, const IntervalSet& busy, Metrics& x) {
  if (m.device_records == 0) return;
  x.drain_judged = true;
  const auto waits = m.waits_on_queued.find(x.feeder_tid);
  if (waits == m.waits_on_queued.end() || waits->second.kernel_waits.empty()) return;
  const auto& spans = busy.spans();
  uint64_t drained = 0, cost_ns = 0;
  for (const KernelWait& w : waits->second.kernel_waits) {
    const auto next = std::upper_bound(spans.begin(), spans.end(), std::make_pair(w.end_ns, UINT64_MAX));
    // No device work after it (the program's last wait), or none recorded
    // before it (what it waited for is not in the records): nothing to judge.
    if (next == spans.end() || next == spans.begin()) continue;
    const uint64_t idle_from = std::max(w.end_ns, std::prev(next)->second);
    if (idle_from > w.end_ns + kDrainSkewNs || !judged_span(m, w.end_ns, next->first)) continue;  // still busy
    ++drained;
    cost_ns += std::min(w.wait_ns, next->first - idle_from);
  }
  const double stride = static_cast<double>(waits->second.kernel_wait_stride);
  x.drained_waits = static_cast<uint64_t>(static_cast<double>(drained) * stride);
  x.drain_share = std::min(x.wait_on_kernels_share,
                           static_cast<double>(cost_ns) * stride / std::max<double>(1, static_cast<double>(m.wall_ns())));
}

}  // namespace gpuscope::analyzer
