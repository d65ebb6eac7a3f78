// A thread's pending run of "not ready" polls, shared with the writer.
//
// A program that waits with `while (cudaEventQuery(e) == cudaErrorNotReady)`
// makes millions of identical calls a second. The polling thread keeps them
// as one record that grows (poll_coalescing.cpp) and pushes it to its ring
// when anything else is recorded on the thread. Until then the run is
// published here, so that the writer can take it while the thread is still
// polling: at every flush (a long poll shows up while it lasts), once the
// thread has exited, and at the end of the session, when the thread may
// still be in its loop. The ring stays single-producer: the writer never
// pushes, it takes the run and adds it to the chunk itself.
//
// The hand-over: the run lives in two buffers and one state word (version,
// which buffer, published or not). The owner writes the next version of the
// run into the buffer that is not published and publishes it with one CAS,
// so the published buffer is always whole: a taker never waits for the
// owner, even one preempted in the middle of an update. The taker copies the
// published buffer and claims that very version with one CAS; a copy that
// raced with the owner fails its claim and is thrown away, never written. A
// claim the owner loses to tells it the writer has the run: it begins a new
// one. To push the run to its ring the owner marks it Pushing, pushes, and
// marks it gone: a taker that sees Pushing knows the run will be in the
// ring, and one that must have everything (the end of the session) waits
// for those few stores and drains the ring. Versions only grow, so no state
// is ever seen twice (no ABA).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gpuscope_generated.h"

namespace gpuscope::capture {

// What a pending run becomes in the trace, and what the writer needs to put
// it there in order.
struct PollRecord {
  fb::ApiCall call;  // repeat = the polls so far; duration = first start .. last end
  fb::Sync sync;     // the same span and correlation id
  // The owner's ring position when the run began: everything the thread
  // pushed before the run lies below it, so a taker drains that far first.
  uint64_t ring_position;
  uint32_t epoch;       // capture_epoch() when the run began: a run never spans a pause
  uint8_t ring_flags;   // kRecordInTicks, as the ring header would carry it
  uint8_t reserved[3];
};
static_assert(std::is_trivially_copyable_v<PollRecord>);
static_assert(sizeof(PollRecord) % 8 == 0);

class PollRun {
 public:
  // ---- owner (the polling thread) ----

  // Publishes `r` as a new run. Only when none is published (the owner
  // never had one, ended it, or a taker took it): no taker touches the
  // state or the buffers then.
  void begin(const PollRecord& r) noexcept {
    const uint64_t s = state_.load(std::memory_order_relaxed);
    write_spare(s, r);
    state_.store(next(s, kPublished, spare(s)), std::memory_order_release);
  }

  // Publishes `r` as the next version of the run: false when a taker has
  // taken the run meanwhile (its last version is in the trace; `r` is not).
  bool update(const PollRecord& r) noexcept {
    uint64_t s = state_.load(std::memory_order_relaxed);
    if (tag(s) != kPublished) return false;
    write_spare(s, r);
    return state_.compare_exchange_strong(s, next(s, kPublished, spare(s)), std::memory_order_release,
                                          std::memory_order_relaxed);
  }

  // Withdraws the run to push it to the ring: false when a taker has it.
  // After true, pushed() once the push is done (or dropped).
  bool end() noexcept {
    uint64_t s = state_.load(std::memory_order_relaxed);
    if (tag(s) != kPublished) return false;
    handover_wanted_.store(0, std::memory_order_relaxed);
    return state_.compare_exchange_strong(s, next(s, kPushing, index(s)), std::memory_order_relaxed,
                                          std::memory_order_relaxed);
  }
  void pushed() noexcept {
    const uint64_t s = state_.load(std::memory_order_relaxed);
    state_.store(next(s, kEmpty, index(s)), std::memory_order_release);
  }

  // The writer wants the run now and could not take it (the owner kept
  // replacing it): the owner pushes it at its next poll instead of growing it.
  bool handover_wanted() const noexcept { return handover_wanted_.load(std::memory_order_relaxed) != 0; }

  // ---- taker (the writer, or the thread ending the session) ----

  enum class Peek { Empty, Published, Pushing };

  // Copies the published run. `*seen` is what claim() must find to take it.
  // Pushing: the owner is putting the run into its ring right now.
  Peek peek(PollRecord* out, uint64_t* seen) const noexcept {
    const uint64_t s = state_.load(std::memory_order_acquire);
    *seen = s;
    if (tag(s) != kPublished) return tag(s) == kPushing ? Peek::Pushing : Peek::Empty;
    load_words(index(s), out);
    // Pairs with write_spare()'s release fence: if the copy read anything
    // the owner wrote after publishing `s`, the claim below sees a newer
    // state and fails.
    std::atomic_thread_fence(std::memory_order_acquire);
    return Peek::Published;
  }

  // Takes the run peek() copied: true when it was still that version, so
  // the copy is whole and the owner will neither push it nor grow it.
  bool claim(uint64_t seen) noexcept {
    if (!state_.compare_exchange_strong(seen, next(seen, kEmpty, index(seen)), std::memory_order_acq_rel,
                                        std::memory_order_relaxed))
      return false;
    handover_wanted_.store(0, std::memory_order_relaxed);
    return true;
  }

  // A thread polling without pause publishes a new version every few
  // nanoseconds, so a taker's claim may keep failing: it asks the owner to
  // hand the run over through its ring instead (handover_wanted).
  void want_handover() noexcept { handover_wanted_.store(1, std::memory_order_relaxed); }

  // No thread polls any more (before a session starts): forget the run.
  void reset() noexcept {
    handover_wanted_.store(0, std::memory_order_relaxed);
    const uint64_t s = state_.load(std::memory_order_relaxed);
    state_.store(next(s, kEmpty, index(s)));
  }

 private:
  // state_: version << 3 | buffer << 2 | tag.
  static constexpr uint64_t kEmpty = 0, kPublished = 1, kPushing = 2, kTagMask = 3, kIndexBit = 4, kVersion = 8;
  static constexpr size_t kWords = sizeof(PollRecord) / sizeof(uint64_t);

  static uint64_t tag(uint64_t s) noexcept { return s & kTagMask; }
  static uint32_t index(uint64_t s) noexcept { return (s & kIndexBit) != 0 ? 1 : 0; }
  static uint32_t spare(uint64_t s) noexcept { return index(s) ^ 1; }
  static uint64_t next(uint64_t s, uint64_t t, uint32_t buffer) noexcept {
    return ((s & ~(kTagMask | kIndexBit)) + kVersion) | (buffer != 0 ? kIndexBit : 0) | t;
  }

  // Word by word through atomic_ref: a taker may still be copying this
  // buffer as an older version while the owner rewrites it; its claim
  // decides whether what it read counts.
  void write_spare(uint64_t s, const PollRecord& r) noexcept {
    // Orders the publication the owner made last before these stores, for
    // a taker that reads them (seqlock fence, paired in peek()).
    std::atomic_thread_fence(std::memory_order_release);
    uint64_t w[kWords];
    std::memcpy(w, &r, sizeof r);
    uint64_t* to = words_[spare(s)];
    for (size_t i = 0; i < kWords; ++i) std::atomic_ref<uint64_t>(to[i]).store(w[i], std::memory_order_relaxed);
  }
  void load_words(uint32_t buffer, PollRecord* out) const noexcept {
    uint64_t w[kWords];
    auto* from = const_cast<uint64_t*>(words_[buffer]);
    for (size_t i = 0; i < kWords; ++i) w[i] = std::atomic_ref<uint64_t>(from[i]).load(std::memory_order_relaxed);
    std::memcpy(out, w, sizeof w);
  }

  std::atomic<uint64_t> state_{0};
  std::atomic<uint32_t> handover_wanted_{0};
  alignas(std::atomic_ref<uint64_t>::required_alignment) uint64_t words_[2][kWords] = {};
};

}  // namespace gpuscope::capture
