// Implicit synchronization: the calls that made the host (or the streams)
// wait without saying so, named per cause with counts, host time, call
// sites and the fix for each (analyzer/model/implicit_syncs.h).
//
// Its share is the feeding thread's time blocked in the causes no other
// finding holds (memsets of host-visible memory): pageable async copies are
// copy time (PCIe), frees and allocations the allocator's (churn), polls
// explicit synchronization, and the legacy default stream blocks the
// device, not the host. Each is named here with its count and fix; no
// second of host time decides two verdicts.
#include <algorithm>
#include <optional>

#include "rules_internal.h"

namespace gpuscope::analyzer {
namespace {

std::string cause_evidence(ImplicitCause cause, const ImplicitCauseStats& s, const ImplicitSyncs& all) {
  const ImplicitCauseInfo& info = implicit_cause_info(cause);
  std::string line = fmt::format("{}: {} call{}, {:.3f} s", info.label, s.total.calls, s.total.calls == 1 ? "" : "s",
                                 s.total.ns / 1e9);
  if (cause == ImplicitCause::PollLoop)
    line = fmt::format("{}: {} polls in {} loops, {:.3f} s (counted with explicit synchronization)", info.label,
                       s.total.calls, s.records, s.total.ns / 1e9);
  if (cause == ImplicitCause::LegacyStreamMix)
    line += fmt::format(" on the host; {} blocking stream(s) used{}", all.blocking_streams_used,
                        all.nonblocking_streams == 0 ? " (none recorded as created non-blocking)" : "");
  return line;
}

// A cause worth its fix: repeated like a loop, or a tenth of the run.
bool material(const ImplicitCauseStats& s, double wall_s) {
  return s.total.calls >= kImplicitCallsWarn || (wall_s > 0 && s.total.ns / 1e9 >= kWarnShare * wall_s);
}

// The costliest call sites of the material causes; sites under 1 % of the
// largest one's time that are not repeated either are noise next to it.
std::vector<CallSite> implicit_sites(const TraceModel& m, double wall_s, size_t n) {
  std::vector<CallSite> out;
  for (const ImplicitCauseStats& s : m.implicit_syncs.causes) {
    if (!material(s, wall_s)) continue;
    for (const auto& [key, t] : s.sites)
      out.push_back(CallSite{m.summary.name_of(static_cast<uint32_t>(key >> 32)), static_cast<uint32_t>(key), t.calls,
                             t.ns});
  }
  std::sort(out.begin(), out.end(), [](const CallSite& a, const CallSite& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.count > b.count;
  });
  if (!out.empty())
    std::erase_if(out, [&](const CallSite& s) { return s.ns * 100 < out.front().ns && s.count < kImplicitCallsWarn; });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace

std::optional<Finding> implicit_sync_finding(const TraceModel& m, const Metrics& x) {
  const ImplicitSyncs& syncs = m.implicit_syncs;
  const double share = x.implicit_sync_share;
  Status st = share_status(share, kFailShare, kWarnShare);
  // A few at start and end (every program frees its buffers) are no
  // finding; a cause repeated like a loop is, whatever its host time.
  const bool repeated = std::any_of(syncs.causes.begin(), syncs.causes.end(),
                                    [](const ImplicitCauseStats& s) { return s.total.calls >= kImplicitCallsWarn; });
  if (st == Status::Pass && repeated) st = Status::Warn;
  if (st == Status::Pass) return std::nullopt;
  Finding f{"sync.implicit_synchronization", Bottleneck::SyncBound, st, share,
            fmt::format("implicit synchronization: {} calls synchronized without saying so; they hold the feeding "
                        "thread {} of the time",
                        x.implicit_sync_calls, pct(share)),
            {}, {}, {}};
  std::vector<std::string> fixes;
  for (size_t i = 0; i < kImplicitCauses; ++i) {
    const auto cause = static_cast<ImplicitCause>(i);
    if (syncs.causes[i].total.calls == 0) continue;
    f.evidence.push_back(cause_evidence(cause, syncs.causes[i], syncs));
    if (material(syncs.causes[i], x.wall_s)) fixes.push_back(implicit_cause_info(cause).fix);
  }
  f.fix = fmt::format("{}.", fmt::join(fixes, "; "));
  f.sites = implicit_sites(m, x.wall_s, 3);
  return f;
}

}  // namespace gpuscope::analyzer
