// Poll loops (docs/interception.md, "Poll loops"): consecutive "not ready"
// answers of one query on one handle become one record that counts them,
// and no path the capture ends by loses a run that is still pending.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "recorder.h"
#include "session_fixture.h"

namespace gpuscope::capture {
namespace {

constexpr int32_t kNotReady = 600;
constexpr uint64_t kEvent = 0xe1, kOtherEvent = 0xe2;

// One query, as the hooks record it (hooks/call_info.h, PollCall): a "not
// ready" answer joins the thread's run, anything else is a call and its
// Sync. Returns whether the call was recorded at all.
bool poll(uint32_t function_id, uint64_t object, int32_t result = kNotReady) {
  ApiCallScope scope(function_id);
  if (!scope.active()) return false;
  const auto sync = [&](uint64_t end) {
    return fb::Sync(scope.start(), end - scope.start(), scope.correlation_id(), object, fb::SyncKind::EventQuery,
                    fb::Source::Host, 0, result);
  };
  if (result == kNotReady) scope.finish_not_ready(result, 0, 0, 0, sync);
  else scope.finish_with(result, 0, 0, 0, 0, sync);
  return true;
}

uint64_t repeat_of(const fb::ApiCall& c) { return c.repeat() > 1 ? c.repeat() : 1; }

// Polls are counted in full only by the writer's end-of-session take.
SessionOptions no_flush_options() {
  SessionOptions o = quiet_options();
  o.flush_interval_ms = 60'000;
  return o;
}

TEST_F(SessionTest, AThousandNotReadyPollsAreOneRecord) {
  start(no_flush_options());
  const uint32_t query = session_strings().intern("cudaEventQuery");
  const uint64_t before = monotonic_ns();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(poll(query, kEvent));
  const uint64_t last_poll_done = monotonic_ns();
  ASSERT_TRUE(poll(query, kEvent, 0));  // ready: a call of its own
  const auto t = stop_and_read();
  EXPECT_EQ(t.summary.dropped_total(), 0u);
  ASSERT_EQ(t.api_calls.size(), 2u);
  ASSERT_EQ(t.syncs.size(), 2u);
  const fb::ApiCall& run = t.api_calls[0];
  EXPECT_EQ(run.repeat(), 1000u);
  EXPECT_EQ(run.result(), kNotReady);
  EXPECT_EQ(run.function_id(), query);
  // From the first poll's start to the last one's end (2 us of slack for
  // the tick conversion, as in ApiCallTimesLieWithinTheCall).
  EXPECT_GE(run.start_ns() + 2000, before);
  EXPECT_LE(run.start_ns() + run.duration_ns(), last_poll_done + 2000);
  EXPECT_GT(run.duration_ns(), 0u);
  const fb::Sync& run_sync = t.syncs[0];
  EXPECT_EQ(run_sync.correlation_id(), run.correlation_id());
  EXPECT_EQ(run_sync.start_ns(), run.start_ns());
  EXPECT_EQ(run_sync.duration_ns(), run.duration_ns());
  EXPECT_EQ(run_sync.object(), kEvent);
  const fb::ApiCall& ready = t.api_calls[1];
  EXPECT_EQ(ready.repeat(), 0u);
  EXPECT_EQ(ready.result(), 0);
  EXPECT_GE(ready.start_ns(), run.start_ns() + run.duration_ns());
  EXPECT_EQ(t.summary.calls_by_function.at("cudaEventQuery"), 1001u);
  EXPECT_EQ(t.summary.coalesced_polls, 1000u);
  EXPECT_EQ(t.summary.coalesced_records, 1u);
}

// A run is one function on one handle with nothing else recorded between:
// any other call, another handle, another query function, or a pause of
// the capture ends it.
TEST_F(SessionTest, InterleavedCallsBreakTheRun) {
  start(no_flush_options());
  const uint32_t query = session_strings().intern("cudaEventQuery");
  const uint32_t stream_query = session_strings().intern("cudaStreamQuery");
  const uint32_t launch = session_strings().intern("cudaLaunchKernel");
  for (int i = 0; i < 10; ++i) poll(query, kEvent);
  ApiCallScope(launch).finish(0);
  for (int i = 0; i < 7; ++i) poll(query, kEvent);
  for (int i = 0; i < 5; ++i) poll(query, kOtherEvent);
  for (int i = 0; i < 4; ++i) poll(stream_query, kOtherEvent);
  for (int i = 0; i < 3; ++i) poll(stream_query, kOtherEvent, 1);  // an error is a call of its own
  for (int i = 0; i < 2; ++i) poll(query, kEvent);
  end_poll_runs();  // what a closing capture window does
  for (int i = 0; i < 6; ++i) poll(query, kEvent);
  const auto t = stop_and_read();
  std::vector<std::pair<uint32_t, uint64_t>> got;
  for (const auto& c : t.api_calls) got.emplace_back(c.function_id(), c.repeat());
  const std::vector<std::pair<uint32_t, uint64_t>> want = {
      {query, 10}, {launch, 0}, {query, 7}, {query, 5}, {stream_query, 4},
      {stream_query, 0}, {stream_query, 0}, {stream_query, 0}, {query, 2}, {query, 6}};
  EXPECT_EQ(got, want);
  ASSERT_EQ(t.syncs.size(), want.size() - 1);  // the launch has none
  EXPECT_EQ(t.syncs[1].object(), kEvent);
  EXPECT_EQ(t.syncs[2].object(), kOtherEvent);
  EXPECT_EQ(t.summary.calls_by_function.at("cudaEventQuery"), 30u);
  EXPECT_EQ(t.summary.calls_by_function.at("cudaStreamQuery"), 7u);
  EXPECT_EQ(t.summary.coalesced_polls, 34u);
  EXPECT_EQ(t.summary.coalesced_records, 6u);
}

// An exited thread's slot is recycled by the writer between flushes: its
// pending run goes into the trace before that, not at the next flush.
TEST_F(SessionTest, ThreadExitFlushesAPendingPoll) {
  SessionOptions o = no_flush_options();
  o.max_threads = 4;
  start(o);
  const uint32_t query = session_strings().intern("cuEventQuery");
  std::thread([&] {
    for (int i = 0; i < 500; ++i) poll(query, kEvent);
  }).join();
  for (int waited = 0; free_thread_buffers() < 4 && waited < 5000; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(free_thread_buffers(), 4u) << "the writer never recycled the exited thread's buffer";
  const auto t = stop_and_read();
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.api_calls[0].repeat(), 500u);
  EXPECT_EQ(t.syncs.size(), 1u);
}

// The end of the session takes the run of a thread that has not finished
// polling: the ring is the thread's, so the writer takes the run from the
// thread's slot instead.
TEST_F(SessionTest, SessionEndTakesTheRunOfAThreadStillPolling) {
  start(no_flush_options());
  const uint32_t query = session_strings().intern("cudaStreamQuery");
  std::atomic<int> stage{0};
  std::thread poller([&] {
    for (int i = 0; i < 2000; ++i) poll(query, kEvent);
    stage = 1;
    while (stage.load() != 2) std::this_thread::yield();
    while (poll(query, kEvent)) {  // after the end: not recorded
    }
  });
  while (stage.load() != 1) std::this_thread::yield();
  const auto t = stop_and_read();
  stage = 2;
  poller.join();
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.api_calls[0].repeat(), 2000u);
  EXPECT_EQ(t.summary.calls_by_function.at("cudaStreamQuery"), 2000u);
}

// A thread polling without pause while the session ends: whatever it
// recorded before the end is in the trace, counted once.
TEST_F(SessionTest, SessionEndWhileAThreadPollsCountsEachPollOnce) {
  start(quiet_options());
  const uint32_t query = session_strings().intern("cudaEventQuery");
  std::atomic<uint64_t> recorded{0};
  std::thread poller([&] {
    while (poll(query, kEvent)) recorded.fetch_add(1, std::memory_order_relaxed);
  });
  while (recorded.load() < 100'000) std::this_thread::yield();
  const uint64_t before_stop = recorded.load();
  const auto t = stop_and_read();
  poller.join();
  uint64_t in_trace = 0;
  for (const auto& c : t.api_calls) in_trace += repeat_of(c);
  EXPECT_GE(in_trace, before_stop);
  // A poll in flight when recording stopped may end after the last take:
  // at most that one is missing.
  EXPECT_LE(in_trace, recorded.load());
  EXPECT_GE(in_trace + 1, recorded.load());
  EXPECT_EQ(t.summary.drops[static_cast<size_t>(fb::DropReason::BufferFull)], 0u);
}

// A long poll shows up while it lasts: every flush writes the run so far.
TEST_F(SessionTest, AFlushWritesALongPollWhileItLasts) {
  start(quiet_options());  // flushes every 20 ms
  const uint32_t query = session_strings().intern("cudaEventQuery");
  std::atomic<bool> seen{false};
  uint64_t polls = 0;
  std::thread poller([&] {
    while (!seen.load()) polls += poll(query, kEvent) ? 1 : 0;
    poll(query, kEvent, 0);
  });
  for (int waited = 0; !seen && waited < 5000; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto live = test::read_trace_file(path_);  // the trace as written so far
    for (const auto& c : live.api_calls) seen = seen || c.repeat() > 0;
  }
  poller.join();
  EXPECT_TRUE(seen) << "no run of polls was written while the thread polled";
  const auto t = stop_and_read();
  uint64_t not_ready = 0;
  for (const auto& c : t.api_calls)
    if (c.result() == kNotReady) not_ready += repeat_of(c);
  EXPECT_EQ(not_ready, polls);
  EXPECT_EQ(t.summary.calls_by_function.at("cudaEventQuery"), polls + 1);
}

// The writer takes runs at every flush while their threads go on growing
// them, and ordinary calls end runs: every poll is in exactly one record.
// Each call takes the next correlation id of its thread and a run keeps its
// first poll's, so a thread's records cover its ids 1..N once each.
TEST_F(SessionTest, RunsTakenWhileTheyGrowAreCountedOnce) {
  SessionOptions o = quiet_options();
  o.drain_interval_ms = 1;
  o.flush_interval_ms = 1;
  start(o);
  const uint32_t query = session_strings().intern("cudaEventQuery");
  const uint32_t launch = session_strings().intern("cudaLaunchKernel");
  constexpr int kThreads = 4;
  constexpr uint64_t kPollsPerLaunch = 1000;
  std::vector<uint64_t> polls(kThreads, 0);
  std::atomic<bool> enough{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      uint64_t& n = polls[i];
      do {
        poll(query, kEvent);
        if (++n % kPollsPerLaunch == 0) ApiCallScope(launch).finish(0);
      } while (n % kPollsPerLaunch != 0 || !enough.load(std::memory_order_relaxed));
    });
  // Between launches a run has kPollsPerLaunch polls unless the writer took
  // it (or had it handed over) while it grew: poll on until the trace, as
  // written so far, shows that.
  bool split = false;
  for (int waited = 0; !split && waited < 10'000; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (const auto& c : test::read_trace_file(path_).api_calls)
      split = split || (c.repeat() != 0 && c.repeat() < kPollsPerLaunch);
  }
  enough = true;
  for (auto& th : threads) th.join();
  EXPECT_TRUE(split) << "no run was taken while it grew";
  const auto t = stop_and_read();
  EXPECT_EQ(t.summary.dropped_total(), 0u);
  uint64_t all_polls = 0;
  for (uint64_t n : polls) all_polls += n;
  EXPECT_EQ(t.summary.calls_by_function.at("cudaEventQuery"), all_polls);
  std::map<uint32_t, std::map<uint64_t, uint64_t>> ids_by_thread;  // first id -> calls
  for (const auto& c : t.api_calls)
    ids_by_thread[c.tid()][c.correlation_id() & ((uint64_t{1} << 40) - 1)] = repeat_of(c);
  ASSERT_EQ(ids_by_thread.size(), static_cast<size_t>(kThreads));
  std::multiset<uint64_t> calls_per_thread, expected_per_thread;
  for (const auto& [tid, ids] : ids_by_thread) {
    uint64_t next = 1;
    for (const auto& [first, calls] : ids) {
      ASSERT_EQ(first, next) << "tid " << tid << ": a gap or an overlap";
      next = first + calls;
    }
    calls_per_thread.insert(next - 1);
  }
  for (uint64_t n : polls) expected_per_thread.insert(n + n / kPollsPerLaunch);
  EXPECT_EQ(calls_per_thread, expected_per_thread);
}

// A run that finds the ring full is dropped whole and counted as the
// records its polls would have made one by one.
TEST_F(SessionTest, ADroppedRunCountsEveryPoll) {
  SessionOptions o = quiet_options();
  o.ring_kb = 4;
  o.drain_interval_ms = 60'000;  // nothing is drained until the end
  o.flush_interval_ms = 60'000;
  start(o);
  const uint32_t query = session_strings().intern("cudaEventQuery");
  const uint32_t launch = session_strings().intern("cudaLaunchKernel");
  for (int i = 0; i < 1000; ++i) ApiCallScope(launch).finish(0);  // fills the 4 KiB ring
  for (int i = 0; i < 300; ++i) poll(query, kEvent);
  ApiCallScope(launch).finish(0);  // ends the run: it cannot be pushed
  const auto t = stop_and_read();
  uint64_t queries = 0;
  for (const auto& c : t.api_calls) queries += c.function_id() == query ? 1 : 0;
  EXPECT_EQ(queries, 0u);
  const uint64_t launches_in_trace = t.api_calls.size();
  EXPECT_EQ(t.summary.drops[static_cast<size_t>(fb::DropReason::BufferFull)],
            (1001 - launches_in_trace) + 2 * 300);
}

}  // namespace
}  // namespace gpuscope::capture
