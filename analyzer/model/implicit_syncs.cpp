#include "implicit_syncs.h"

#include "function_names.h"

#include <initializer_list>
#include <optional>
#include <string_view>

#include "call_repeats.h"
#include "record_flags.h"

namespace gpuscope::analyzer {
namespace {

constexpr uint64_t kLegacy = 0;                 // the legacy default stream's key (handle 0 or cudaStreamLegacy)
constexpr uint64_t kStreamLegacyHandle = 0x1;   // cudaStreamLegacy / CU_STREAM_LEGACY
constexpr uint64_t kStreamPerThreadHandle = 0x2;  // cudaStreamPerThread / CU_STREAM_PER_THREAD
constexpr int32_t kNotReady = 600;              // cudaErrorNotReady, CUDA_ERROR_NOT_READY

bool is_host_visible(fb::MemoryKind k) {
  return k == fb::MemoryKind::Pinned || k == fb::MemoryKind::Registered || k == fb::MemoryKind::Managed ||
         k == fb::MemoryKind::ManagedStatic;
}

bool is_pageable_async_copy(const fb::Copy& c) {
  if (c.source() != fb::Source::Host || (c.flags() & container::kCopyAsync) == 0 ||
      (c.flags() & container::kCopyPrefetch) != 0)
    return false;
  const bool host_device = c.direction() == fb::CopyDirection::HostToDevice ||
                           c.direction() == fb::CopyDirection::DeviceToHost ||
                           c.direction() == fb::CopyDirection::Default;
  return host_device && (c.src_kind() == fb::MemoryKind::Pageable || c.dst_kind() == fb::MemoryKind::Pageable);
}

constexpr uint64_t kPerThreadKey = uint64_t{1} << 63;  // | tid: a thread's per-thread default stream

// The stream a work call went to: the legacy default stream is kLegacy. The
// per-thread default stream is a blocking stream of its thread (it
// synchronizes with the legacy stream when a program uses both).
uint64_t stream_key(const fb::ApiCall& c) {
  const bool per_thread_default = c.stream() == kStreamPerThreadHandle ||
                                  ((c.flags() & container::kCallPerThreadStream) != 0 && c.stream() == 0);
  if (per_thread_default) return kPerThreadKey | c.tid();
  return c.stream() == 0 || c.stream() == kStreamLegacyHandle ? kLegacy : c.stream();
}

}  // namespace

const ImplicitCauseInfo& implicit_cause_info(ImplicitCause cause) {
  static constexpr ImplicitCauseInfo kInfo[kImplicitCauses] = {
      {"pageable_async_copy", "cudaMemcpyAsync from/to pageable memory (the host waits for the copy)",
       "copy from/to pinned buffers (cudaHostAlloc, or cudaHostRegister on the existing ones) so the copy is "
       "really asynchronous",
       false},
      {"host_visible_memset", "cudaMemset on pinned or managed memory (fully synchronous)",
       "use cudaMemsetAsync on a stream, or set host-visible memory on the host", true},
      {"free", "cudaFree/cudaFreeHost (waits for the device to drain)",
       "allocate once outside the loop, or use cudaMallocAsync/cudaFreeAsync with a memory pool instead of "
       "cudaFree on the path",
       false},
      {"allocation_with_work_queued",
       "allocation with work queued (cudaMalloc/cudaMallocHost/cudaHostRegister serialize the streams)",
       "allocate before the work starts and reuse the buffers, or use cudaMallocAsync from a memory pool", false},
      {"legacy_default_stream",
       "work on the legacy default stream while a blocking stream had work queued (they serialize)",
       "create the streams with cudaStreamNonBlocking, or build with --default-stream per-thread (or pass "
       "cudaStreamPerThread) instead of using stream 0",
       false},
      {"poll_loop", "stream/event queries polled in a loop (\"not ready\" answers)",
       "wait with cudaEventSynchronize on an event created with cudaEventBlockingSync, or hand the follow-up to "
       "cudaLaunchHostFunc / a stream callback instead of spinning on queries",
       false},
  };
  return kInfo[static_cast<size_t>(cause)];
}

ImplicitSyncTally::Role ImplicitSyncTally::classify(uint32_t function_id) {
  const std::string name = names_.name_of(function_id);
  const std::string_view n = name;
  const bool async = n.find("Async") != std::string_view::npos;
  Role r = Role::Other;
  if (starts_with_any(n, {"cudaMemcpy", "cuMemcpy"})) r = async ? Role::CopyAsync : Role::CopySync;
  else if (starts_with_any(n, {"cudaMemset", "cuMemsetD"})) r = async ? Role::MemsetAsync : Role::MemsetSync;
  else if (starts_with_any(n, {"cudaFree", "cuMemFree"})) r = async ? Role::Other : Role::Free;
  else if (starts_with_any(n, {"cudaMalloc", "cudaHostAlloc", "cudaHostRegister", "cuMemAlloc", "cuMemHostAlloc",
                               "cuMemHostRegister"}))
    r = async || n.starts_with("cudaMallocFromPool") ? Role::Other : Role::Alloc;
  else if (starts_with_any(n, {"cudaDeviceSynchronize", "cuCtxSynchronize"})) r = Role::DeviceSync;
  else if (starts_with_any(n, {"cudaStreamSynchronize", "cuStreamSynchronize"})) r = Role::StreamSync;
  else if (starts_with_any(n, {"cudaEventSynchronize", "cuEventSynchronize"})) r = Role::EventSync;
  else if (starts_with_any(n, {"cudaStreamQuery", "cudaEventQuery", "cuStreamQuery", "cuEventQuery"})) r = Role::Query;
  else if (starts_with_any(n, {"cudaStreamCreate", "cuStreamCreate"})) r = Role::StreamCreate;
  else if (starts_with_any(n, {"__cudaLaunchKernel", "cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cuLaunch",
                               "cudaGraphLaunch", "cuGraphLaunch", "cudaEventRecord", "cuEventRecord"}))
    r = Role::Launch;
  roles_[function_id] = r;
  return r;
}

void ImplicitSyncTally::mark_typed_records(const reader::ChunkView& v) {
  marked_before_.swap(marked_);
  marked_.clear();
  for (const auto& c : v.copies)
    if (is_pageable_async_copy(c)) marked_[c.correlation_id()] = ImplicitCause::PageableAsyncCopy;
  for (const auto& s : v.memsets)
    if (s.source() == fb::Source::Host && is_host_visible(s.memory_kind()))
      marked_[s.correlation_id()] = ImplicitCause::HostVisibleMemset;
}

void ImplicitSyncTally::count(ImplicitCause cause, const fb::ApiCall& c) {
  ImplicitCauseStats& s = out_.causes[static_cast<size_t>(cause)];
  const uint64_t calls = reader::calls_in(c);
  s.total.calls += calls;
  s.total.ns += c.duration_ns();
  ++s.records;
  ImplicitCallTime& site = (*site_of_[static_cast<size_t>(cause)])[(uint64_t{c.function_id()} << 32) | c.stack_id()];
  site.calls += calls;
  site.ns += c.duration_ns();
  if (implicit_cause_info(cause).counts_as_blocked) out_.blocked_ns_by_thread[c.tid()] += c.duration_ns();
  if (on_counted_) on_counted_(cause, c);
}

bool ImplicitSyncTally::blocking_stream_queued() const { return queued_.blocking_other_than(kLegacy); }

// Work enqueued on a stream: on the legacy default stream it waits for the
// blocking streams' queued work (and they for it).
void ImplicitSyncTally::on_work(const fb::ApiCall& c, bool kept) {
  const uint64_t key = stream_key(c);
  if (key == kLegacy) {
    if (kept && blocking_stream_queued()) count(ImplicitCause::LegacyStreamMix, c);
    queued_.set(kLegacy, true);
    return;
  }
  if (key == settled_stream_) return;
  StreamFacts& facts = stream_facts_[key];
  const bool blocking = !facts.nonblocking;
  if (blocking && !facts.used_blocking) {
    facts.used_blocking = true;
    ++out_.blocking_streams_used;
  }
  queued_.set(key, blocking);
  settled_stream_ = key;
}

void ImplicitSyncTally::on_sync(const fb::ApiCall& c, Role role) {
  settled_stream_ = kNoStream;  // whatever follows may change queued_
  if (c.result() != 0) return;  // not ready, or failed: nothing finished
  // An event query names no stream: like an event synchronize, it is taken
  // to cover the work queued before it.
  if ((role == Role::StreamSync || role == Role::Query) && c.stream() != 0) {
    queued_.erase(stream_key(c));
    return;
  }
  queued_.clear();
}

void ImplicitSyncTally::add_call(const fb::ApiCall& c, bool kept) {
  if (c.result() != 0 && c.result() != kNotReady) return;  // a failing call did no work
  const Role role = role_of(c.function_id());
  const auto marked = [&]() -> std::optional<ImplicitCause> {
    for (const auto* table : {&marked_, &marked_before_})
      if (auto it = table->find(c.correlation_id()); it != table->end()) return it->second;
    return std::nullopt;
  };
  switch (role) {
    case Role::CopyAsync:
      if (auto m = marked(); kept && m == ImplicitCause::PageableAsyncCopy) count(*m, c);
      on_work(c, kept);
      break;
    case Role::MemsetSync:
      if (auto m = marked(); kept && m == ImplicitCause::HostVisibleMemset) count(*m, c);
      on_work(c, kept);
      break;
    case Role::CopySync:  // waits for the legacy stream, and so for the blocking streams
      on_work(c, kept);
      if (stream_key(c) == kLegacy) queued_.erase_blocking();
      settled_stream_ = kNoStream;
      break;
    case Role::MemsetAsync:
    case Role::Launch: on_work(c, kept); break;
    case Role::Free:
      if (kept) count(ImplicitCause::Free, c);
      queued_.clear();
      settled_stream_ = kNoStream;
      break;
    case Role::Alloc:
      if (kept && work_queued()) count(ImplicitCause::AllocationWithWorkQueued, c);
      break;
    case Role::Query:
      if (kept && c.result() == kNotReady) count(ImplicitCause::PollLoop, c);
      on_sync(c, role);
      break;
    case Role::DeviceSync:
    case Role::StreamSync:
    case Role::EventSync: on_sync(c, role); break;
    case Role::StreamCreate:
      settled_stream_ = kNoStream;  // the stream's kind may change
      if ((c.flags() & container::kCallNonBlockingStream) != 0 && c.stream() != 0) {
        StreamFacts& facts = stream_facts_[c.stream()];
        if (!facts.nonblocking) {
          facts.nonblocking = true;
          ++out_.nonblocking_streams;
        }
      }
      break;
    case Role::Other: break;
  }
}

}  // namespace gpuscope::analyzer
