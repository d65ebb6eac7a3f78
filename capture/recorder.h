// The hot path: what a hook does to record an event.
//
// Cost budget (docs/performance.md): one TLS load, two relaxed atomic loads,
// two vDSO clock reads, one byte check for a pending run of polls, one ring
// push. No lock, no allocation, no syscall. Everything that can be slow
// (claiming a buffer, lazy initialization) is in the out-of-line slow path,
// taken once per thread; a poll that answers "not ready" takes its own
// out-of-line path (coalesce_poll: it grows the thread's pending run with
// one CAS instead of a ring push).
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "clock.h"
#include "thread_slots.h"

namespace gpuscope::capture {

enum class Phase : uint32_t {
  Idle = 0,       // not started (yet): hooks pass through
  Recording = 1,  // events go to the thread buffers
  Stopped = 2,    // capture ended (exit, output failure): pass through
  Disabled = 3,   // never record in this process (fork child, secure exec, opt-out)
  Paused = 4      // between capture windows (capture_window.h): pass through, nothing dropped
};

// Per-thread state. Plain and zero-initialized so no TLS constructor runs, and
// initial-exec so an access is a single %fs-relative load.
struct ThreadContext {
  ThreadSlot* slot;
  uint32_t generation;  // the session generation `slot` belongs to
  uint8_t internal;     // non-zero while gpuscope's own code runs on this thread
  uint8_t depth;        // nesting of hooked calls on this thread
  uint8_t exited;       // the thread-exit destructor has run
  uint8_t key_set;      // the thread-exit destructor is armed
  uint16_t claim_backoff;  // events to skip before trying to claim a buffer again
  // Correlation id of the outermost hooked call in progress on this thread,
  // 0 outside one: CUPTI's API callback (cupti/collector.cpp) pairs it with
  // CUPTI's own id, so device records find their host call.
  uint64_t outer_correlation;
};

namespace detail {
extern std::atomic<Phase> g_phase;
extern std::atomic<uint32_t> g_generation;
// Bumped whenever recording pauses or stops: a run of polls (poll_run.h)
// never grows across a stretch that was not captured.
extern std::atomic<uint32_t> g_capture_epoch;
// constinit: no dynamic initialization, so an access needs no TLS wrapper check.
extern thread_local constinit ThreadContext t_context __attribute__((tls_model("initial-exec")));
ThreadSlot* attach_current_thread() noexcept;
}  // namespace detail

inline ThreadContext& thread_context() noexcept { return detail::t_context; }

// Marks a stretch of gpuscope's own code on this thread: hooks reached from
// it (say, a CUDA call made by a library gpuscope uses) are not recorded.
class InternalScope {
 public:
  InternalScope() noexcept { ++detail::t_context.internal; }
  ~InternalScope() { --detail::t_context.internal; }
  InternalScope(const InternalScope&) = delete;
  InternalScope& operator=(const InternalScope&) = delete;
};

// The calling thread's buffer if this event should be recorded, else null.
inline ThreadSlot* recording_slot() noexcept {
  ThreadContext& t = detail::t_context;
  if (t.internal != 0) return nullptr;
  ThreadSlot* s = t.slot;
  const Phase phase = detail::g_phase.load(std::memory_order_relaxed);
  if (__builtin_expect(s == nullptr ||
                           t.generation != detail::g_generation.load(std::memory_order_relaxed),
                       0)) {
    // A thread without a buffer gets one only to record (or to start
    // capture lazily); outside a capture window that is one branch.
    if (phase != Phase::Recording && phase != Phase::Idle) return nullptr;
    return detail::attach_current_thread();
  }
  if (__builtin_expect(phase != Phase::Recording, 0)) {
    // Outside a capture window nothing is lost: the user asked for less.
    if (phase != Phase::Paused) s->drops[static_cast<size_t>(fb::DropReason::NotRecording)].add();
    return nullptr;
  }
  return s;
}

// Coalesced polls (poll_run.h; the owner's side is poll_coalescing.cpp).
inline uint32_t capture_epoch() noexcept { return detail::g_capture_epoch.load(std::memory_order_relaxed); }
inline void end_poll_runs() noexcept { detail::g_capture_epoch.fetch_add(1, std::memory_order_relaxed); }
// Pushes the thread's pending run of polls into its ring (or counts it
// dropped), unless the writer took it.
void flush_poll_run(ThreadSlot& slot) noexcept;
// A poll that answered "not ready", as its ApiCall and Sync: joins the
// thread's pending run when that is the same function on the same handle,
// else ends that run and begins one.
void coalesce_poll(ThreadSlot& slot, const fb::ApiCall& call, const fb::Sync& sync, uint8_t flags) noexcept;

// Every push goes through here first: a pending run of polls ended before
// whatever is recorded now, so it goes into the ring ahead of it. One load
// of a byte on a line the call touches anyway, for calls that are no polls.
inline void settle_poll_run(ThreadSlot* slot) noexcept {
  if (__builtin_expect(slot->poll_pending != 0, 0)) flush_poll_run(*slot);
}

// `flags`: kRecordInTicks when start_ns/duration_ns came from hot_timestamp()
// in tick mode.
template <class T> inline bool record(ThreadSlot* slot, const T& r, uint8_t flags = 0) noexcept {
  settle_poll_run(slot);
  if (slot->ring.try_push_records(flags, r)) return true;
  slot->drops[static_cast<size_t>(fb::DropReason::BufferFull)].add();
  return false;
}

// A call and its typed record: both kept or both dropped (two drops), so
// every figure computed from the trace pairs up.
template <class A, class B> inline bool record_pair(ThreadSlot* slot, const A& a, const B& b, uint8_t flags = 0) noexcept {
  settle_poll_run(slot);
  if (slot->ring.try_push_records(flags, a, b)) return true;
  slot->drops[static_cast<size_t>(fb::DropReason::BufferFull)].add(2);
  return false;
}

template <class T> inline bool record(const T& r) noexcept {
  ThreadSlot* slot = recording_slot();
  return slot != nullptr && record(slot, r);
}

// Brackets one hooked call: takes the start time and a correlation id on
// entry, and on finish() records the ApiCall with its duration and result.
// Typed records (Copy, Sync, ...) for the same call reuse correlation_id().
class ApiCallScope {
 public:
  struct NoTypedRecord {};

  explicit ApiCallScope(uint32_t function_id, uint16_t nested_counter = 0) noexcept
      : ApiCallScope([function_id] { return function_id; }, [nested_counter] { return nested_counter; }) {}

  // `function_id()` is evaluated only when recording, so a lazily interned
  // name costs nothing while gpuscope is idle or disabled. `nested_counter()`
  // only for a nested call (depth > 0): where it is counted if it succeeds
  // (call_counts.h), 0 to record it in full.
  template <class IdFn, class CounterFn>
    requires std::is_invocable_r_v<uint32_t, IdFn> && std::is_invocable_r_v<uint16_t, CounterFn>
  ApiCallScope(IdFn&& function_id, CounterFn&& nested_counter) noexcept : slot_(recording_slot()) {
    if (slot_ == nullptr) return;
    depth_ = detail::t_context.depth++;
    function_id_ = function_id();
    if (depth_ == 0) {
      correlation_id_ = slot_->next_correlation_id();
      detail::t_context.outer_correlation = correlation_id_;  // one TLS store
    } else {
      counter_ = nested_counter();
    }
    ticks_ = hot_timestamps_are_ticks();
    // A call that will most likely only be counted takes no clock reading
    // (~12 ns each on a VM's TSC); if it fails after all, finish() records
    // it with no duration: the outer call carries it.
    if (counter_ == 0) start_ = hot_timestamp(ticks_);
  }
  ~ApiCallScope() {
    if (slot_ == nullptr) return;
    ThreadContext& t = detail::t_context;
    --t.depth;
    if (depth_ == 0) t.outer_correlation = 0;
  }
  ApiCallScope(const ApiCallScope&) = delete;
  ApiCallScope& operator=(const ApiCallScope&) = delete;

  bool active() const noexcept { return slot_ != nullptr; }
  // 0 for the outermost gpuscope-visible call on this thread.
  uint8_t depth() const noexcept { return depth_; }
  ThreadSlot* slot() const noexcept { return slot_; }
  uint64_t correlation_id() const noexcept { return correlation_id_; }
  // Takes the start time again: for work done after the scope opened that is
  // gpuscope's, not the call's (unwinding the call stack).
  void restart_clock() noexcept {
    if (slot_ != nullptr && counter_ == 0) start_ = hot_timestamp(ticks_);
  }
  // Start and end in the hot-path timebase; typed records that copy them
  // must be recorded with record_flags().
  uint64_t start() const noexcept { return start_; }
  uint8_t record_flags() const noexcept { return ticks_ ? kRecordInTicks : 0; }

  // A nested call with a counter that succeeds is counted, not recorded.
  bool counts_on_success() const noexcept { return counter_ != 0; }
  // finish(0) for such a call, short enough to inline into every hook.
  void count_success() noexcept { bump_call_counter(slot_->counters, counter_); }

  // Records the call, or counts it; returns its end timestamp (0 when
  // inactive or counted).
  __attribute__((always_inline)) uint64_t finish(int32_t result, uint64_t stream = 0, uint8_t flags = 0,
                                                 int16_t device = -1, uint32_t stack_id = 0) noexcept {
    return finish_with(result, stream, flags, device, stack_id, NoTypedRecord{});
  }

  // The same; the outermost call also gets the typed record (Copy, Sync,
  // Kernel, ...) that `make_typed(end)` builds, in the same ring push as its
  // ApiCall: under backpressure both are kept or both dropped.
  template <class MakeTyped>
  __attribute__((always_inline)) uint64_t finish_with(int32_t result, uint64_t stream, uint8_t flags, int16_t device,
                                                      uint32_t stack_id, MakeTyped&& make_typed) noexcept {
    if (slot_ == nullptr) return 0;
    if (result == 0 && counts_on_success()) {
      count_success();
      return 0;
    }
    const uint64_t end = hot_timestamp(ticks_);
    if (counter_ != 0) start_ = end;  // not timed: see the constructor
    if (depth_ != 0) correlation_id_ = slot_->next_correlation_id();
    const fb::ApiCall rec = make_call(end, result, stream, flags, device, stack_id);
    if constexpr (std::is_same_v<std::decay_t<MakeTyped>, NoTypedRecord>) {
      record(slot_, rec, record_flags());
    } else {
      if (depth_ == 0) record_pair(slot_, rec, make_typed(end), record_flags());
      else record(slot_, rec, record_flags());
    }
    return end;
  }

  // An outermost poll (cudaEventQuery, cuStreamQuery, ...) that answered
  // "not ready": joins the thread's run of such polls (coalesce_poll)
  // rather than becoming records of its own. `make_sync(end)` builds its
  // Sync record.
  template <class MakeSync>
  void finish_not_ready(int32_t result, uint64_t stream, uint8_t flags, int16_t device, MakeSync&& make_sync) noexcept {
    const uint64_t end = hot_timestamp(ticks_);
    coalesce_poll(*slot_, make_call(end, result, stream, flags, device, 0, 1), make_sync(end), record_flags());
  }

 private:
  // `repeat` 0: a plain call (one); coalesced polls count from 1.
  fb::ApiCall make_call(uint64_t end, int32_t result, uint64_t stream, uint8_t flags, int16_t device,
                        uint32_t stack_id, uint32_t repeat = 0) const noexcept {
    return fb::ApiCall(start_, end - start_, correlation_id_, stream, slot_->tid, stack_id, result, function_id_,
                       depth_, flags, device, repeat);
  }

  ThreadSlot* slot_;
  uint64_t start_ = 0;
  bool ticks_ = false;
  uint64_t correlation_id_ = 0;
  uint32_t function_id_ = 0;
  uint16_t counter_ = 0;
  uint8_t depth_ = 0;
};

}  // namespace gpuscope::capture
