#include "writer.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>

#include "clock.h"
#include "diag.h"
#include "recorder.h"
#include "session.h"
#include "signal_free_thread.h"

namespace gpuscope::capture {
namespace {

constexpr size_t kDrainBatch = 4096;  // records per ring visit
// Taking a run of polls its thread keeps growing (Writer::take_poll_run):
// tries at a flush before the thread is asked to hand it over.
constexpr uint32_t kPollTakeAttempts = 4;

}  // namespace

Writer::Writer(const SessionOptions& options, SlotPool& pool, StringTable& strings,
               TraceOutput& output, std::atomic<uint64_t>& unslotted_drops,
               std::vector<TraceSource*> sources)
    : options_(options),
      pool_(pool),
      strings_(strings),
      output_(output),
      unslotted_drops_(unslotted_drops),
      encoder_(options.zstd_level),
      cpu_sampler_(strings),
      sources_(std::move(sources)) {}

Writer::~Writer() {
  // Only reached when stop timed out: the thread may still be writing, so it
  // is let go rather than joined.
  if (thread_.joinable()) thread_.detach();
}

bool Writer::start(const ProcessMetadata& metadata, std::string* error) {
  if (!output_.append(file_header_bytes())) {
    *error = output_.failure();
    return false;
  }
  builder_.set_metadata(metadata);
  builder_.add_strings(strings_.take_pending());
  if (!write_chunk(nullptr)) {
    *error = output_.failure();
    return false;
  }
  started_ = true;
  ticks_.start();
  thread_ = start_signal_free_thread([this] { run(); });
  return true;
}

void Writer::run() {
  InternalScope internal;  // nothing this thread does is traced
  pthread_setname_np(pthread_self(), "gpuscope-writer");
  std::unique_lock lock(mutex_);
  if (!taken_over_) {
    working_ = true;
    lock.unlock();
    begin_sources();
    lock.lock();
    working_ = false;
  }
  while (!taken_over_) {
    wake_.wait_for(lock, std::chrono::milliseconds(options_.drain_interval_ms),
                   [this] { return request_.pending || taken_over_; });
    if (taken_over_) break;
    Request req = request_;
    working_ = true;
    lock.unlock();
    // A source ending the capture (the last window closed) is a stop this
    // thread asks of itself: nobody waits on it.
    const bool self_stop = !req.pending && capture_end_wanted();
    if (self_stop) req = Request{true, true, EndNote{fb::EndKind::Detached, 0}, 0};
    work(req);
    lock.lock();
    working_ = false;
    if (taken_over_) break;
    if (self_stop) break;
    if (req.pending) {
      completed_serial_ = req.serial;
      request_.pending = false;
      done_.notify_all();
      if (req.stop) break;
    }
  }
  // Taken over: the thread that took over owns the file now.
  if (!taken_over_ && !output_dead_) output_.close();
  thread_exited_ = true;
  done_.notify_all();
}

void Writer::begin_sources() {
  last_flush_ns_ = monotonic_ns();
  for (TraceSource* source : sources_) source->begin(builder_);
  sources_begun_ = true;
}

void Writer::work(const Request& req) {
  const uint64_t now = monotonic_ns();
  const uint64_t cpu_ns = options_.cpu_sample_interval_ms * 1'000'000ull;
  // Runs of polls still growing go into every chunk written on time: a
  // long poll shows up while it lasts.
  const bool flush_due = now - last_flush_ns_ >= options_.flush_interval_ms * 1'000'000ull;
  drain_all(flush_due || req.pending, req.pending);
  if (cpu_ns != 0 && (now - last_cpu_sample_ns_ >= cpu_ns || req.pending)) {
    cpu_sampler_.sample(now, builder_);
    last_cpu_sample_ns_ = now;
  }
  if (req.stop)
    for (TraceSource* source : sources_) source->end();
  poll_sources(now);
  if (req.pending) {
    const TotalsInfo totals = make_totals(req.end, "");
    write_chunk(&totals);
    last_flush_ns_ = now;
  } else if (flush_due) {
    write_chunk(nullptr);
    last_flush_ns_ = now;
  }
}

bool Writer::capture_end_wanted() const {
  for (const TraceSource* source : sources_)
    if (source->wants_capture_end()) return true;
  return false;
}

// Empties every ring in batches, writing a chunk whenever one is full.
// `take_polls`: the runs of polls threads have pending go in too (an
// exited thread's always); `wait_for_polls`: at the end, waiting for one
// being rewritten.
void Writer::drain_all(bool take_polls, bool wait_for_polls) {
  if (hot_timestamps_are_ticks()) ticks_.calibrate();  // a fresh pair brackets the records drained now
  for (uint32_t i = 0; i < pool_.size(); ++i) {
    ThreadSlot& slot = pool_.at(i);
    const SlotState state = slot.state.load(std::memory_order_acquire);
    if (state == SlotState::Free) continue;
    drain_ring(slot.ring);
    if (take_polls || state == SlotState::Retired) take_poll_run(slot, wait_for_polls);
    add_call_counts(slot);
    // Retired was stored after the thread's last push (and count), so the
    // drain above has emptied it for good.
    if (state == SlotState::Retired) pool_.recycle(slot, retired_drops_);
  }
  // Strings after records: every string a drained record refers to was
  // interned before that record was pushed, so it is in this chunk or earlier.
  if (!output_dead_) builder_.add_strings(strings_.take_pending());
}

// What the slot's thread counted since the last drain, one CallCount per
// function whose counter moved. Each function's name was interned before
// its counter index was assigned, so the strings taken after the drain
// cover it.
void Writer::add_call_counts(ThreadSlot& slot) {
  const uint16_t assigned = call_counters_assigned();
  CallCounterPage& page = *slot.counters;
  for (uint16_t i = 1; i < assigned; ++i) {
    const uint64_t now = std::atomic_ref<uint64_t>(page.counts[i]).load(std::memory_order_relaxed);
    if (now == page.written[i]) continue;
    const CountedFunction f = counted_function(i);
    if (f.function_id == 0) continue;  // being assigned: next drain
    if (!output_dead_)
      builder_.add_call_count(fb::CallCount(monotonic_ns(), now - page.written[i], slot.tid, f.function_id, f.flags,
                                            0, 0, 0));
    page.written[i] = now;
  }
}

// Whole runs of ring records go to the builder at once, kDrainBatch records
// (a few hundred KiB of ring) per visit so producers get space back early.
void Writer::drain_ring(SpscRing& ring) {
  for (;;) {
    if (output_dead_) {
      events_discarded_ += ring.drain([](RecordType, const std::byte*, uint32_t, uint8_t) {});
      return;
    }
    size_t taken = 0;
    ring.drain_runs([&](std::span<const std::byte> run) {
      const auto take = builder_.add_ring_records(run, ticks_, kDrainBatch - taken);
      taken += take.records;
      return take.bytes;
    });
    if (builder_.approximate_bytes() >= kChunkTargetBytes) write_chunk_with_strings();
    if (taken < kDrainBatch) return;
  }
}

// The run of polls `slot`'s thread has pending (poll_run.h), after every
// record the thread pushed before it began. A thread that polls on keeps
// replacing its run, and a copy of a replaced version cannot be claimed: at
// the end (`wait`: the thread records no more, but for a call in flight) the
// take is retried until it holds, otherwise the thread is asked to hand the
// run over through its ring at its next poll. A run the thread pushes to its
// ring meanwhile is drained from there.
void Writer::take_poll_run(ThreadSlot& slot, bool wait) {
  // At the end only a call in flight when recording stopped can still
  // replace the run or be pushing it: a few stores, but its thread may be
  // preempted right then, for as long as a loaded machine keeps it waiting.
  // A quarter of the exit timeout leaves the rest to the last frame; no
  // wait at all for the calling thread's own run (a signal handler that
  // interrupted it ends the process).
  if (wait && slot.tid == static_cast<uint32_t>(gettid())) wait = false;
  const uint64_t deadline = wait ? monotonic_ns() + options_.exit_timeout_ms * 250'000ull : 0;
  for (uint32_t attempt = 0; !output_dead_; ++attempt) {
    PollRecord run;
    uint64_t seen = 0;
    switch (slot.poll.peek(&run, &seen)) {
      case PollRun::Peek::Empty:
        if (wait || attempt != 0) drain_ring(slot.ring);  // what the thread pushed meanwhile
        return;
      case PollRun::Peek::Published:
        if (run.ring_position > slot.ring.consumed()) drain_ring(slot.ring);
        if (slot.poll.claim(seen)) {
          builder_.add_stamped(run.call, run.ring_flags, ticks_);
          builder_.add_stamped(run.sync, run.ring_flags, ticks_);
          return;
        }
        if (!wait) {
          if (attempt + 1 < kPollTakeAttempts) continue;
          slot.poll.want_handover();
          return;
        }
        break;
      case PollRun::Peek::Pushing:  // a later drain finds it in the ring
        if (!wait) return;
        break;
    }
    // Looked at again after every wait, however long the wait took.
    if (monotonic_ns() > deadline) return;
    std::this_thread::yield();
  }
}

// Sources and the loader log add to the chunk being built; their strings
// (interned while they ran) are taken last so they travel with it.
void Writer::poll_sources(uint64_t now) {
  if (output_dead_) return;
  for (TraceSource* source : sources_) source->poll(now, builder_);
  builder_.add_loads(take_library_loads());
  builder_.add_strings(strings_.take_pending());
}

DropCounts Writer::current_drops() const {
  DropCounts d{};
  for (size_t r = 0; r < kDropReasonCount; ++r) d[r] = retired_drops_[r];
  for (uint32_t i = 0; i < pool_.size(); ++i)
    for (size_t r = 0; r < kDropReasonCount; ++r) d[r] += pool_.at(i).drops[r].get();
  d[static_cast<size_t>(fb::DropReason::NoBuffer)] += unslotted_drops_.load(std::memory_order_relaxed);
  return d;
}

TotalsInfo Writer::make_totals(const EndNote& end, std::string message) const {
  TotalsInfo t;
  t.end_monotonic_ns = monotonic_ns();
  t.end = end;
  t.events_written = events_written_;  // write_frame adds this chunk's records
  t.frames_written = frames_written_;
  t.bytes_written = output_.bytes_written();
  t.message = std::move(message);
  t.tick_rate_restarts = ticks_.rate_changes();
  return t;
}

bool Writer::write_chunk_with_strings() {
  if (!output_dead_) builder_.add_strings(strings_.take_pending());
  return write_chunk(nullptr);
}

bool Writer::write_chunk(const TotalsInfo* totals) {
  if (output_dead_) return false;
  if (builder_.empty() && totals == nullptr) return true;
  builder_.set_drops(current_drops());
  TotalsInfo with_count;
  if (totals != nullptr) {
    with_count = *totals;
    with_count.events_written += builder_.record_count();
    builder_.set_totals(with_count);
  }
  const size_t records = builder_.record_count();
  const bool ok = write_frame(builder_.build(), totals);
  builder_.clear();
  if (ok) events_written_ += records;
  return ok;
}

bool Writer::write_frame(std::span<const uint8_t> chunk, const TotalsInfo* /*totals*/) {
  const auto frame = encoder_.encode(chunk, frames_written_);
  if (!frame.empty() && output_.append(frame)) {
    ++frames_written_;
    return true;
  }
  on_output_failure();
  return false;
}

void Writer::on_output_failure() {
  output_dead_ = true;
  const std::string reason = output_.failed() ? output_.failure()
                                              : std::string("compressing a frame failed: ") + encoder_.last_error();
  if (!started_) return;  // start() hands the reason to its caller instead
  detail::g_phase.store(Phase::Stopped, std::memory_order_relaxed);
  diag_line("%s; tracing stopped, the program continues untraced", reason.c_str());
  // Say in the trace itself why it ends here, if a small frame still fits.
  ChunkBuilder last;
  last.set_drops(current_drops());
  last.set_totals(make_totals(EndNote{fb::EndKind::OutputFailed, 0}, reason));
  const auto frame = encoder_.encode(last.build(), frames_written_);
  if (!frame.empty() && output_.append_after_failure(frame)) ++frames_written_;
  output_.close();
}

bool Writer::finish(const EndNote& end, bool stop, uint32_t timeout_ms) {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return true;
  if (thread_exited_) {  // it stopped itself (capture_end_wanted): reap it
    lock.unlock();
    thread_.join();
    return true;
  }
  request_ = Request{true, stop, end, request_.serial + 1};
  const uint64_t serial = request_.serial;
  wake_.notify_one();
  const bool done = done_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    return completed_serial_ >= serial || thread_exited_;
  });
  if (done && stop) {
    lock.unlock();
    thread_.join();
  }
  return done;
}

bool Writer::finish_here(const EndNote& end, uint32_t timeout_ms) {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return true;
  if (thread_exited_) {  // it stopped itself and wrote its own end
    lock.unlock();
    thread_.join();
    return true;
  }
  taken_over_ = true;
  wake_.notify_one();
  if (!done_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return !working_; })) return false;
  lock.unlock();
  thread_.detach();  // it only ever wakes to see taken_over_ and return
  InternalScope internal;
  if (!sources_begun_) begin_sources();  // the process ends before the thread ever ran
  work(Request{true, true, end, 0});
  if (!output_dead_) output_.close();
  return true;
}

}  // namespace gpuscope::capture
