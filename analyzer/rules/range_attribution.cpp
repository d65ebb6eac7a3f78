// Findings -> NVTX ranges. A finding is about kinds of host calls (copies,
// synchronization, allocation ...); the model has, per range name, the host
// time of each kind spent inside it (innermost range of each call). The
// range with the most of the finding's kinds is the one to name.
#include <algorithm>
#include <bitset>

#include "rules.h"

namespace gpuscope::analyzer {
namespace {

using KindSet = std::bitset<kCallKinds>;

KindSet kinds_of_class(Bottleneck cls) {
  KindSet k;
  switch (cls) {
    case Bottleneck::PcieBound: k.set(static_cast<size_t>(CallKind::Copy)); break;
    case Bottleneck::SyncBound: k.set(static_cast<size_t>(CallKind::Sync)); break;
    case Bottleneck::MemoryBound:
      k.set(static_cast<size_t>(CallKind::Alloc));
      k.set(static_cast<size_t>(CallKind::Free));
      break;
    case Bottleneck::CpuBound: k.set(static_cast<size_t>(CallKind::Launch)); break;
    default: break;
  }
  return k;
}

KindSet kinds_of(const Finding& f) {
  KindSet k;
  for (const CallSite& s : f.sites) k.set(static_cast<size_t>(classify_function(s.function)));
  return k.any() ? k : kinds_of_class(f.cls);
}

uint64_t time_in(const RangeStats& r, const KindSet& kinds) {
  uint64_t ns = 0;
  for (size_t k = 0; k < kCallKinds; ++k)
    if (kinds.test(k)) ns += r.blocked_ns[k];
  return ns;
}

}  // namespace

void attribute_findings_to_ranges(const TraceModel& model, Analysis* analysis) {
  if (!model.ranges_attributed || model.range_stats.empty()) return;
  for (Finding& f : analysis->findings) {
    const KindSet kinds = kinds_of(f);
    if (kinds.none()) continue;
    // Total of these kinds over the scope, inside ranges or not.
    uint64_t total = 0;
    for (const CallKind k : {CallKind::Sync, CallKind::Copy, CallKind::Memset, CallKind::Alloc, CallKind::Free,
                             CallKind::Launch, CallKind::Init, CallKind::Other})
      if (kinds.test(static_cast<size_t>(k))) total += model.host_by_kind[static_cast<size_t>(k)].ns;
    const RangeStats* best = nullptr;
    uint64_t best_ns = 0;
    for (const RangeStats& r : model.range_stats) {
      const uint64_t ns = time_in(r, kinds);
      if (ns > best_ns) {
        best = &r;
        best_ns = ns;
      }
    }
    if (best == nullptr || total == 0) continue;
    f.range = best->name;
    f.range_domain = best->domain;
    f.range_share = std::min(1.0, static_cast<double>(best_ns) / static_cast<double>(total));
  }
}

}  // namespace gpuscope::analyzer
