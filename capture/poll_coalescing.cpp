// The polling thread's side of coalesced polls (poll_run.h): a run of
// "not ready" answers from the same function on the same handle grows in
// place; anything else recorded on the thread pushes it to the ring first.
#include "recorder.h"

namespace gpuscope::capture {
namespace {

// ApiCall.repeat is 32 bits: a run that long is pushed and a new one begun.
constexpr uint32_t kMaxRepeat = UINT32_MAX;

bool continues(const PollRecord& run, const fb::ApiCall& call, const fb::Sync& sync, uint8_t ring_flags,
               uint32_t epoch) noexcept {
  return run.call.function_id() == call.function_id() && run.sync.object() == sync.object() &&
         run.call.flags() == call.flags() && run.call.device() == call.device() && run.ring_flags == ring_flags &&
         run.epoch == epoch && run.call.repeat() < kMaxRepeat;
}

// The run's call and sync, kept or dropped together like any call and its
// typed record. Dropped, it counts what its polls would have cost one by
// one (a call and a sync each): a drop count says how much activity the
// trace lacks, whatever form the records would have taken.
void push_run(ThreadSlot& slot, const PollRecord& run) noexcept {
  using Part = SpscRing::Part;
  if (!slot.ring.try_push_all<2>({Part{RecordType::ApiCall, &run.call, sizeof run.call},
                                  Part{RecordType::Sync, &run.sync, sizeof run.sync}},
                                 run.ring_flags))
    slot.drops[static_cast<size_t>(fb::DropReason::BufferFull)].add(2ull * run.call.repeat());
}

// The run now ends where `call` ends. Never shorter than it was: the clock
// of a thread that moved to another core may read a little behind.
void extend(PollRecord& run, const fb::ApiCall& call) noexcept {
  const uint64_t end = call.start_ns() + call.duration_ns();
  if (end > run.call.start_ns() + run.call.duration_ns()) {
    run.call.mutate_duration_ns(end - run.call.start_ns());
    run.sync.mutate_duration_ns(end - run.sync.start_ns());
  }
  run.call.mutate_repeat(run.call.repeat() + 1);
}

// Pushes the pending run to the ring, unless the writer took it.
void end_run(ThreadSlot& slot) noexcept {
  if (!slot.poll.end()) return;
  push_run(slot, slot.poll_own);
  slot.poll.pushed();
}

}  // namespace

void flush_poll_run(ThreadSlot& slot) noexcept {
  slot.poll_pending = 0;
  end_run(slot);
}

void coalesce_poll(ThreadSlot& slot, const fb::ApiCall& call, const fb::Sync& sync, uint8_t flags) noexcept {
  const uint32_t epoch = capture_epoch();
  PollRecord& run = slot.poll_own;
  if (slot.poll_pending != 0) {
    if (!slot.poll.handover_wanted() && continues(run, call, sync, flags, epoch)) {
      extend(run, call);
      if (slot.poll.update(run)) return;
      // The writer took the run as it was before this poll: this one begins the next.
    } else {
      end_run(slot);
    }
  }
  run.call = call;
  run.sync = sync;
  run.ring_position = slot.ring.produced();
  run.epoch = epoch;
  run.ring_flags = flags;
  slot.poll.begin(run);
  slot.poll_pending = 1;
}

}  // namespace gpuscope::capture
