#include "call_sequence.h"

#include <algorithm>

namespace gpuscope::analyzer {

void CallSequence::add(const reader::TraceSummary& names, CallKind kind, uint32_t tid, uint64_t start_ns,
                       uint64_t duration_ns, SiteKey site) {
  const Traits* traits = traits_.find(site.function_id);
  if (traits == nullptr)
    traits = &(traits_[site.function_id] = Traits{is_query_without_context(names.name_of(site.function_id))});
  if (!traits->query && start_ns < first_.start_ns) first_ = FirstCall{start_ns, duration_ns, tid, kind, site};
  Queue& q = queue_of_[tid];
  if (kind == CallKind::Launch || kind == CallKind::Copy || kind == CallKind::Memset) {
    q.kernels |= kind == CallKind::Launch;
    q.transfers |= kind != CallKind::Launch;
    ++q.waits.queued_ops;
  } else if (kind == CallKind::Sync && (q.kernels || q.transfers)) {
    ++q.waits.waits;
    (q.kernels ? q.waits.on_kernels_ns : q.waits.on_transfers_ns) += duration_ns;
    if (q.kernels) q.waits.keep_kernel_wait({start_ns + duration_ns, duration_ns});
    q.kernels = q.transfers = false;
  }
}

// The stride is a power of two (it only doubles), so a mask picks every stride-th wait.
void QueuedWaits::keep_kernel_wait(const KernelWait& w) {
  if ((kernel_waits_seen++ & (kernel_wait_stride - 1)) != 0) return;
  if (kernel_waits.size() == kMaxKernelWaitsKept) {  // keep every other one, and from now every other one
    for (size_t i = 0; i < kernel_waits.size() / 2; ++i) kernel_waits[i] = kernel_waits[2 * i];
    kernel_waits.resize(kernel_waits.size() / 2);
    kernel_wait_stride *= 2;
    if (((kernel_waits_seen - 1) & (kernel_wait_stride - 1)) != 0) return;
  }
  kernel_waits.push_back(w);
}

void CallSequence::add_outcome(CallKind kind, uint64_t start_ns, uint32_t function_id, int32_t result) {
  if (result == 0) {
    if (kind == CallKind::Launch || kind == CallKind::Copy || kind == CallKind::Memset || kind == CallKind::Alloc)
      last_work_ns_ = std::max(last_work_ns_, start_ns);
  } else if (result != TraceModel::kNotReadyResult) {
    const TraceModel::Failure failure{start_ns, function_id, result};
    if (!first_failure_ || start_ns < first_failure_->start_ns) first_failure_ = failure;
    if (!last_failure_ || start_ns >= last_failure_->start_ns) last_failure_ = failure;
  }
}

void CallSequence::finish(TraceModel& m) const {
  m.first_failure = first_failure_;
  m.last_failure = last_failure_;
  m.last_work_ns = last_work_ns_;
  for (const auto& [tid, q] : queues_)
    if (q.waits.waits != 0) m.waits_on_queued[tid] = q.waits;
  if (first_.start_ns == UINT64_MAX) return;
  // A profiler window that opened mid-run usually saw no initialization: its
  // first call is one of many, unless it took as long as creating a
  // context does (the window opened before the program's first CUDA call).
  // A synchronization may wait that long on work queued before the window.
  const bool mid_run = m.summary.import_source && m.summary.import_source->mid_run;
  if (mid_run && (first_.duration_ns < kMidRunInitNs || first_.kind == CallKind::Sync)) return;
  m.context_init_call = m.summary.name_of(first_.site.function_id);
  m.context_init_ns = first_.duration_ns;
  m.context_init_end_ns = first_.start_ns + first_.duration_ns;
  if (first_.kind == CallKind::Init) return;
  // The lazy context creation inside the first call is initialization; the
  // call's own work (a small cudaMalloc) is noise next to it.
  const auto from = static_cast<size_t>(first_.kind), to = static_cast<size_t>(CallKind::Init);
  const auto move = [&](uint64_t& a, uint64_t& b) {
    const uint64_t ns = std::min(a, first_.duration_ns);
    a -= ns;
    b += ns;
  };
  move(m.host_by_kind[from].ns, m.host_by_kind[to].ns);
  if (auto t = m.threads.find(first_.tid); t != m.threads.end()) move(t->second.blocked_ns[from], t->second.blocked_ns[to]);
  if (auto s = m.sites.find(first_.site); s != m.sites.end())
    s->second.calls.ns -= std::min(s->second.calls.ns, first_.duration_ns);
}

}  // namespace gpuscope::analyzer
