// Implicit synchronization: calls that make the host (or the device's
// streams) wait without saying so in their name, counted per cause with
// their host time and call sites, in the same streaming pass as the model.
//
// The causes and what in the trace shows them:
// - cudaMemcpyAsync to or from pageable memory: a host Copy record with the
//   async flag and a pageable side (host<->device; prefetches excluded);
// - cudaMemset (not *Async) on pinned, registered or managed memory: a Memset
//   record of that memory kind made by a synchronous memset function;
// - cudaFree / cudaFreeHost / cuMemFree*: the device drains before memory is
//   released (stream-ordered cudaFreeAsync excluded);
// - an allocation (cudaMalloc, cudaMallocHost, cudaHostAlloc,
//   cudaHostRegister, ... not the stream-ordered ones) made while work was
//   queued on some stream since the last synchronization: it serializes the
//   streams, and may wait for them;
// - work on the legacy default stream (stream 0 or cudaStreamLegacy, not the
//   per-thread default stream) while a blocking stream (not created
//   non-blocking; a per-thread default stream is one) had work queued: the
//   legacy stream waits for every blocking stream and they wait for it;
// - stream/event queries polled in a loop: "not ready" answers (coalesced
//   polls, ApiCall.repeat) - explicit synchronization calls, so their time
//   stays in the explicit synchronization figure.
//
// "Queued since the last synchronization" follows the process's calls in the
// order the trace holds them (per thread within a chunk), cleared by device,
// context, event and stream synchronization and by frees; it is an
// approximation across threads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>

#include "dense_id_map.h"
#include "node_cache.h"
#include "queued_streams.h"
#include "trace_reader.h"
#include "trace_summary.h"

namespace gpuscope::analyzer {

enum class ImplicitCause : uint8_t {
  PageableAsyncCopy,
  HostVisibleMemset,
  Free,
  AllocationWithWorkQueued,
  LegacyStreamMix,
  PollLoop
};
inline constexpr size_t kImplicitCauses = 6;

struct ImplicitCauseInfo {
  const char* id;     // stable, for JSON: "pageable_async_copy"
  const char* label;  // for people
  const char* fix;
  // The call's host time is time the thread sat blocked that no other
  // finding holds: it counts toward the implicit share. Pageable async
  // copies are copy time (the PCIe finding), frees and allocations are the
  // allocator's (churn), polls are explicit synchronization: each is named
  // here and counted there, so that no second decides two verdicts.
  bool counts_as_blocked;
};
const ImplicitCauseInfo& implicit_cause_info(ImplicitCause cause);

struct ImplicitCallTime {
  uint64_t calls = 0, ns = 0;
};

struct ImplicitCauseStats {
  ImplicitCallTime total;
  uint64_t records = 0;  // poll loops: runs of "not ready" answers
  // Call sites: (function id << 32) | stack id.
  std::unordered_map<uint64_t, ImplicitCallTime> sites;
};

struct ImplicitSyncs {
  std::array<ImplicitCauseStats, kImplicitCauses> causes{};
  // Host time in causes that count as blocked, per thread (the feeding
  // thread's share is taken from it).
  std::unordered_map<uint32_t, uint64_t> blocked_ns_by_thread;
  // Streams created non-blocking, as their creation records said (format
  // 1.3 traces from before this was recorded say nothing: every stream is
  // then taken as blocking, the default of cudaStreamCreate).
  uint64_t nonblocking_streams = 0;
  uint64_t blocking_streams_used = 0;  // non-default streams work went to, not known non-blocking
  const ImplicitCauseStats& of(ImplicitCause c) const { return causes[static_cast<size_t>(c)]; }
};

// Fed every chunk of the model's pass; `keep(start_ns)` says whether a
// record is inside what is analyzed (window, scope). Records outside it
// still move the "queued work" state.
class ImplicitSyncTally {
 public:
  explicit ImplicitSyncTally(const reader::TraceSummary& names) : names_(names) {
    for (size_t i = 0; i < kImplicitCauses; ++i) site_of_[i] = std::make_unique<NodeCache<SiteMap, 64>>(out_.causes[i].sites);
  }
  ImplicitSyncTally(const ImplicitSyncTally&) = delete;  // the caches point into streams_ and out_
  ImplicitSyncTally& operator=(const ImplicitSyncTally&) = delete;
  // `keep(start_ns)`: a callable, inlined here (a std::function call per
  // call was a visible part of `analyze`).
  template <class Keep> void add(const reader::ChunkView& v, Keep&& keep) {
    mark_typed_records(v);
    for (const auto& c : v.api_calls)
      if (c.depth() == 0) add_call(c, keep(c.start_ns()));
  }
  ImplicitSyncs finish() { return std::move(out_); }
  // Called with each call counted, as it is (the request tally places
  // them in requests: request_tally.h).
  using CountedCall = std::function<void(ImplicitCause, const fb::ApiCall&)>;
  void on_counted(CountedCall observer) { on_counted_ = std::move(observer); }

 private:
  enum class Role : uint8_t {
    Other, CopySync, CopyAsync, MemsetSync, MemsetAsync, Launch, Free, Alloc, DeviceSync, StreamSync, EventSync,
    Query, StreamCreate
  };
  Role role_of(uint32_t function_id) {
    if (const Role* known = roles_.find(function_id)) return *known;
    return classify(function_id);
  }
  Role classify(uint32_t function_id);
  void mark_typed_records(const reader::ChunkView& v);
  void add_call(const fb::ApiCall& c, bool kept);
  void on_work(const fb::ApiCall& c, bool kept);
  void on_sync(const fb::ApiCall& c, Role role);
  void count(ImplicitCause cause, const fb::ApiCall& c);
  bool work_queued() const { return !queued_.empty(); }
  bool blocking_stream_queued() const;

  const reader::TraceSummary& names_;
  ImplicitSyncs out_;
  DenseIdMap<Role> roles_;
  // Typed records that make their call an implicit sync, by correlation id;
  // this chunk's and the previous one's (a frame may fall between a call
  // and its record).
  std::unordered_map<uint64_t, ImplicitCause> marked_, marked_before_;
  // Streams with work queued since their last synchronization, and whether
  // each is blocking; the legacy default stream is kLegacy.
  QueuedStreams queued_;
  // What is known of each stream handle work went to or was created with:
  // one lookup per call (behind a small cache) instead of a set per fact.
  struct StreamFacts {
    bool nonblocking = false;    // created with cudaStreamNonBlocking
    bool used_blocking = false;  // counted in blocking_streams_used
  };
  std::unordered_map<uint64_t, StreamFacts> streams_;
  NodeCache<decltype(streams_), 64> stream_facts_{streams_};
  // Call sites per cause, behind a cache each: a program calls the same few.
  using SiteMap = decltype(ImplicitCauseStats::sites);
  std::array<std::unique_ptr<NodeCache<SiteMap, 64>>, kImplicitCauses> site_of_;
  // The stream of the last work queued, while nothing since could have
  // changed what on_work records for it (each place that changes queued_
  // or the stream kinds resets it): a loop's launches on one stream then
  // cost a compare instead of three hash lookups each.
  static constexpr uint64_t kNoStream = ~uint64_t{0};
  uint64_t settled_stream_ = kNoStream;
  CountedCall on_counted_;
};

}  // namespace gpuscope::analyzer
