#include "co_tenants.h"

#include <algorithm>

#include "interval_set.h"
#include "trace_model.h"
#include "trace_reader.h"

namespace gpuscope::analyzer {

namespace {

// Calls that hold the calling thread until the process's own device work
// (or the copy it asked for) is done: while one runs, the process's work
// occupies the GPU.
bool waits_for_device(CallKind kind) {
  return kind == CallKind::Sync || kind == CallKind::Copy || kind == CallKind::Memset || kind == CallKind::Free;
}

// One pass: device records when the trace has any, else the waiting calls
// (kept apart until the end, as device records may come late in a trace).
class TenantReader {
 public:
  explicit TenantReader(const reader::TraceSummary& names) : names_(names) {}

  void add(const reader::ChunkView& v) {
    for (const auto& k : v.kernels) add_device(k.source(), k.start_ns(), k.duration_ns());
    for (const auto& c : v.copies) add_device(c.source(), c.start_ns(), c.duration_ns());
    for (const auto& m : v.memsets) add_device(m.source(), m.start_ns(), m.duration_ns());
    for (const auto& c : v.api_calls) {
      if (c.depth() != 0 || !waits_for_device(kind_of(c.function_id()))) continue;
      waiting_.add(c.start_ns(), c.start_ns() + c.duration_ns());
    }
  }

  void finish(GpuTenant* out) const {
    out->busy_from = device_.empty() ? BusyFrom::WaitingCalls : BusyFrom::DeviceRecords;
    out->busy = device_.empty() ? waiting_.spans() : device_.spans();
  }

 private:
  void add_device(fb::Source source, uint64_t start, uint64_t duration) {
    if (source == fb::Source::Device) device_.add(start, start + duration);
  }
  CallKind kind_of(uint32_t function_id) {
    auto [it, fresh] = kinds_.try_emplace(function_id, CallKind::Other);
    if (fresh) it->second = classify_function(names_.name_of(function_id));
    return it->second;
  }

  const reader::TraceSummary& names_;
  IntervalSet device_, waiting_;
  std::unordered_map<uint32_t, CallKind> kinds_;
};

}  // namespace

uint64_t GpuTenant::busy_within(uint64_t from, uint64_t to) const {
  auto it = std::upper_bound(busy.begin(), busy.end(), from,
                             [](uint64_t t, const std::pair<uint64_t, uint64_t>& s) { return t < s.second; });
  uint64_t total = 0;
  for (; it != busy.end() && it->first < to; ++it) total += std::min(it->second, to) - std::max(it->first, from);
  auto shared = std::upper_bound(shares.begin(), shares.end(), from,
                                 [](uint64_t t, const SharedSpan& s) { return t < s.end; });
  double weighted = 0;
  for (; shared != shares.end() && shared->start < to; ++shared)
    weighted += static_cast<double>(std::min(shared->end, to) - std::max(shared->start, from)) * shared->share;
  return total + static_cast<uint64_t>(weighted + 0.5);
}

GpuTenant read_gpu_tenant(reader::TraceReader& trace, const std::string& path) {
  reader::SummaryBuilder summary(trace.info());
  TenantReader tenant(summary.current());
  trace.read([&](const reader::ChunkView& v) {
    summary.add(v);
    tenant.add(v);
  });
  const reader::TraceSummary s = summary.finish(trace);
  GpuTenant out;
  out.trace = path;
  for (const reader::Problem& p : s.problems) out.damaged |= p.kind != reader::ProblemKind::NoTotals;
  if (s.process) {
    out.pid = s.process->pid;
    out.exe = s.process->exe;
    out.boot_id = s.process->boot_id;
    out.hostname = s.process->hostname;
  }
  for (const auto& d : s.devices)
    if (!d.uuid.empty()) out.gpu_uuids.push_back(d.uuid);
  tenant.finish(&out);
  return out;
}

std::vector<const GpuTenant*> co_tenants_of(const reader::TraceSummary& self, const GpuTenants& all) {
  std::vector<const GpuTenant*> out;
  if (!self.process || self.process->boot_id.empty()) return out;  // no clock to line up on
  std::vector<std::string> own;
  for (const auto& d : self.devices)
    if (!d.uuid.empty()) own.push_back(d.uuid);
  for (const GpuTenant& t : all) {
    if (t.boot_id != self.process->boot_id || t.pid == self.process->pid || (t.busy.empty() && t.shares.empty()))
      continue;
    const bool same_gpu = own.empty() || t.gpu_uuids.empty() ||
                          std::any_of(t.gpu_uuids.begin(), t.gpu_uuids.end(), [&](const std::string& u) {
                            return std::find(own.begin(), own.end(), u) != own.end();
                          });
    if (same_gpu) out.push_back(&t);
  }
  return out;
}

uint64_t others_than(const reader::TraceSummary& self, const GpuTenants& all) {
  const int pid = self.process ? self.process->pid : 0;
  const std::string boot = self.process ? self.process->boot_id : "";
  return std::count_if(all.begin(), all.end(), [&](const GpuTenant& t) { return t.pid != pid || t.boot_id != boot; });
}

std::vector<CoTenantOverlap> overlap_co_tenants(const std::vector<GroupedSpan>& spans,
                                                const std::vector<const GpuTenant*>& tenants) {
  std::vector<CoTenantOverlap> out;
  for (const GpuTenant* t : tenants) {
    CoTenantOverlap o{t->pid, t->exe, t->trace, t->busy_from, t->sample_window_ns};
    o.damaged = t->damaged;
    for (const GroupedSpan& s : spans) {
      const uint64_t busy = t->busy_within(s.start_ns, s.end_ns);
      const bool held = static_cast<double>(busy) >= kCoTenantShare * static_cast<double>(s.end_ns - s.start_ns);
      (s.group == 1 ? o.tail_ns : o.band_ns) += busy;
      (s.group == 1 ? o.tail_requests : o.band_requests) += held ? 1 : 0;
    }
    if (o.tail_ns + o.band_ns > 0) out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(), [](const CoTenantOverlap& a, const CoTenantOverlap& b) {
    return a.tail_requests != b.tail_requests ? a.tail_requests > b.tail_requests : a.tail_ns > b.tail_ns;
  });
  return out;
}

}  // namespace gpuscope::analyzer
