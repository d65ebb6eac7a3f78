// The capture core end to end inside one process: records go through the
// thread rings, the writer, zstd frames and the file, and come back through
// the reader exactly as they went in.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "session_fixture.h"

namespace gpuscope::capture {
namespace {

template <class T> bool same_bytes(const T& a, const T& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST_F(SessionTest, EveryRecordTypeRoundTripsBitExact) {
  start(quiet_options());
  const uint32_t fid = session_strings().intern("cudaMemcpy");
  // Timestamps deliberately out of order: deltas go negative and must wrap back.
  const fb::ApiCall api(5'000'000'123, 456, (7ull << 40) | 1, 0xdeadbeef, 1234, 9, 35, fid, 2, 3, -1, 0);
  const fb::ApiCall api2(4'000'000'000, 1, (7ull << 40) | 2, 0, 1234, 0, 0, fid, 0, 0, 0, 0);
  const fb::Copy copy(5'000'000'200, 1000, (7ull << 40) | 1, 1 << 20, 0xdeadbeef, fb::CopyDirection::HostToDevice,
                      fb::MemoryKind::Pageable, fb::MemoryKind::Device, fb::Source::Host, 0, 1);
  const fb::Memset memset_rec(6'000'000'000, 50, 99, 4096, 0, 0xab, fb::MemoryKind::Device, fb::Source::Device, 1);
  const fb::Kernel kernel(7'000'000'000, 5000, 100, 77, fid, 1024, 2, 3, 256, 1, 1, 0, 4096, fb::Source::Device, 0, 0, 0);
  const fb::Sync sync(8'000'000'000, 70000, 101, 0x55, fb::SyncKind::Event, fb::Source::Host, 0, 0);
  const fb::Alloc alloc(9'000'000'000, 800, 102, 0x7f0000000000, 1 << 30, fb::AllocOp::Free, fb::MemoryKind::Device,
                        fb::Source::Host, 1, 0, 0);
  const fb::CpuSample cpu(9'500'000'000, 123456789, 1234, 1234, 0);
  const fb::Marker marker(9'600'000'000, 10, 0, fid, 0, 1234, fb::MarkerKind::Range, 1, 0);
  ASSERT_TRUE(record(api));
  ASSERT_TRUE(record(api2));
  ASSERT_TRUE(record(copy));
  ASSERT_TRUE(record(memset_rec));
  ASSERT_TRUE(record(kernel));
  ASSERT_TRUE(record(sync));
  ASSERT_TRUE(record(alloc));
  ASSERT_TRUE(record(cpu));
  ASSERT_TRUE(record(marker));
  const auto t = stop_and_read();
  ASSERT_EQ(t.api_calls.size(), 2u);
  EXPECT_TRUE(same_bytes(t.api_calls[0], api));
  EXPECT_TRUE(same_bytes(t.api_calls[1], api2));
  ASSERT_EQ(t.copies.size(), 1u);
  EXPECT_TRUE(same_bytes(t.copies[0], copy));
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_TRUE(same_bytes(t.memsets[0], memset_rec));
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_TRUE(same_bytes(t.kernels[0], kernel));
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_TRUE(same_bytes(t.syncs[0], sync));
  ASSERT_EQ(t.allocs.size(), 1u);
  EXPECT_TRUE(same_bytes(t.allocs[0], alloc));
  ASSERT_EQ(t.cpu_samples.size(), 1u);
  EXPECT_TRUE(same_bytes(t.cpu_samples[0], cpu));
  ASSERT_EQ(t.markers.size(), 1u);
  EXPECT_TRUE(same_bytes(t.markers[0], marker));
  EXPECT_EQ(t.summary.strings.at(fid), "cudaMemcpy");
}

TEST_F(SessionTest, MetadataAndTotalsDescribeTheProcess) {
  start(quiet_options());
  ApiCallScope scope(session_strings().intern("cudaGetDevice"));
  scope.finish(0);
  const auto t = stop_and_read(fb::EndKind::ReturnFromMain, 3);
  ASSERT_TRUE(t.summary.process.has_value());
  EXPECT_EQ(t.summary.process->pid, getpid());
  EXPECT_EQ(t.summary.process->run_id, "test-run");
  EXPECT_FALSE(t.summary.process->argv.empty());
  EXPECT_FALSE(t.summary.process->hostname.empty());
  ASSERT_TRUE(t.summary.end.has_value());
  EXPECT_EQ(t.summary.end->kind, fb::EndKind::ReturnFromMain);
  EXPECT_EQ(t.summary.end->exit_status, 3);
  EXPECT_EQ(t.summary.end->events_written, 1u);
  EXPECT_EQ(t.summary.calls_by_function.at("cudaGetDevice"), 1u);
  EXPECT_TRUE(t.summary.problems.empty()) << t.summary.problems.front().message;
}

// The trace says how its calls were stamped (format 2.2): the TSC only when
// the session used ticks, and a clock_gettime naming why otherwise.
TEST_F(SessionTest, TheTraceSaysWhichClockStampedTheCalls) {
  start(quiet_options());
  const bool ticks = hot_timestamps_are_ticks();
  const auto t = stop_and_read();
  ASSERT_TRUE(t.summary.process.has_value());
  const std::string& clock = t.summary.process->host_clock;
  if (ticks) {  // the kernel's clock, or an invariant TSC beside a hypervisor's (protocol/host_clock.h)
    EXPECT_TRUE(clock == "rdtsc (clocksource tsc)" || clock.rfind("rdtsc (invariant TSC; clocksource ", 0) == 0)
        << clock;
  } else {
    EXPECT_EQ(clock.rfind("clock_gettime (", 0), 0u) << clock;
  }

  setenv("GPUSCOPE_CLOCK", "monotonic", 1);
  path_ = dir_.file("monotonic.gpuscope");
  std::string error;
  ASSERT_TRUE(start_session(quiet_options(), path_, collect_process_metadata(), &error)) << error;
  EXPECT_FALSE(hot_timestamps_are_ticks());
  const auto asked = stop_and_read();
  unsetenv("GPUSCOPE_CLOCK");
  ASSERT_TRUE(asked.summary.process.has_value());
  EXPECT_EQ(asked.summary.process->host_clock, "clock_gettime (GPUSCOPE_CLOCK=monotonic)");
}

TEST_F(SessionTest, EightThreadsWriteExactCountsInOrder) {
  SessionOptions o = quiet_options();
  o.ring_kb = 8192;  // 8 MiB per thread: room for all of one thread's records
  start(o);
  constexpr int kThreads = 8;
  constexpr uint64_t kPerThread = 100'000;
  const uint32_t fid = session_strings().intern("cudaStreamQuery");
  std::atomic<uint64_t> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      for (uint64_t n = 0; n < kPerThread; ++n) {
        ApiCallScope scope(fid);
        if (scope.finish(0) == 0) refused++;
      }
    });
  for (auto& th : threads) th.join();
  const auto t = stop_and_read();
  EXPECT_EQ(refused.load(), 0u);
  EXPECT_EQ(t.summary.dropped_total(), 0u);
  ASSERT_EQ(t.api_calls.size(), kThreads * kPerThread);
  // Per thread: every sequence number 1..N, in order (nothing lost or doubled).
  std::map<uint32_t, uint64_t> last_sequence;
  for (const auto& c : t.api_calls) {
    const uint64_t seq = c.correlation_id() & ((1ull << 40) - 1);
    ASSERT_EQ(seq, last_sequence[c.tid()] + 1) << "tid " << c.tid();
    last_sequence[c.tid()] = seq;
  }
  EXPECT_EQ(last_sequence.size(), static_cast<size_t>(kThreads));
  for (const auto& [tid, seq] : last_sequence) EXPECT_EQ(seq, kPerThread);
}

TEST_F(SessionTest, FullBufferDropsAreCountedExactly) {
  SessionOptions o = quiet_options();
  o.ring_kb = 4;                       // 64 records of 64 bytes
  o.drain_interval_ms = 60'000;        // the writer does not drain until stop
  o.flush_interval_ms = 60'000;
  start(o);
  uint64_t accepted = 0;
  constexpr uint64_t kAttempts = 1000;
  for (uint64_t i = 0; i < kAttempts; ++i)
    accepted += record(fb::ApiCall(i, 1, i, 0, 1, 0, 0, 1, 0, 0, 0, 0)) ? 1 : 0;
  const auto t = stop_and_read();
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, kAttempts);
  EXPECT_EQ(t.api_calls.size(), accepted);
  EXPECT_EQ(t.summary.drops[static_cast<size_t>(fb::DropReason::BufferFull)], kAttempts - accepted);
}

// Under backpressure a call and its typed record are dropped together:
// every kept Copy has its ApiCall and every kept ApiCall its Copy, and the
// drop count is exactly the records of the calls that were not kept.
TEST_F(SessionTest, CallsAndTheirTypedRecordsAreKeptOrDroppedTogether) {
  SessionOptions o = quiet_options();
  o.ring_kb = 4;  // 4 KiB: ~35 pairs; the writer drains every 5 ms
  start(o);
  constexpr int kThreads = 16;
  constexpr uint64_t kPerThread = 20'000;
  const uint32_t fid = session_strings().intern("cudaMemcpy");
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      for (uint64_t n = 0; n < kPerThread; ++n) {
        ApiCallScope scope(fid);
        scope.finish_with(0, 0, 0, 0, 0, [&](uint64_t end) {
          return fb::Copy(scope.start(), end - scope.start(), scope.correlation_id(), 4096, 0,
                          fb::CopyDirection::HostToDevice, fb::MemoryKind::Pageable, fb::MemoryKind::Device,
                          fb::Source::Host, 0, 0);
        });
      }
    });
  for (auto& th : threads) th.join();
  const auto t = stop_and_read();
  std::set<uint64_t> calls, copies;
  for (const auto& c : t.api_calls) calls.insert(c.correlation_id());
  for (const auto& c : t.copies) copies.insert(c.correlation_id());
  EXPECT_EQ(calls.size(), t.api_calls.size());
  const auto missing_from = [](const std::set<uint64_t>& a, const std::set<uint64_t>& b) {
    return std::count_if(a.begin(), a.end(), [&](uint64_t id) { return !b.contains(id); });
  };
  EXPECT_EQ(missing_from(calls, copies), 0) << "calls kept without their Copy";
  EXPECT_EQ(missing_from(copies, calls), 0) << "Copy records kept without their call";
  const uint64_t issued = kThreads * kPerThread;
  const uint64_t dropped = t.summary.drops[static_cast<size_t>(fb::DropReason::BufferFull)];
  EXPECT_LT(t.api_calls.size(), issued);  // the rings did overflow
  EXPECT_EQ(dropped, 2 * (issued - t.api_calls.size()));
}

TEST_F(SessionTest, ThreadsBeyondThePoolAreCountedAsNoBuffer) {
  SessionOptions o = quiet_options();
  o.max_threads = 2;
  o.drain_interval_ms = 60'000;  // retired slots are not recycled during the test
  o.flush_interval_ms = 60'000;
  start(o);
  std::atomic<uint64_t> accepted{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      ready++;
      while (ready.load() < 4) std::this_thread::yield();  // all alive at once
      for (int n = 0; n < 10; ++n) accepted += record(fb::ApiCall(n, 1, n, 0, 1, 0, 0, 1, 0, 0, 0, 0)) ? 1 : 0;
    });
  for (auto& th : threads) th.join();
  const auto t = stop_and_read();
  EXPECT_EQ(accepted.load(), 20u);  // two threads had a buffer
  EXPECT_EQ(t.api_calls.size(), 20u);
  EXPECT_EQ(t.summary.drops[static_cast<size_t>(fb::DropReason::NoBuffer)], 20u);
}

TEST_F(SessionTest, ExitedThreadsAreDrainedAndTheirBuffersReused) {
  SessionOptions o = quiet_options();
  o.max_threads = 6;
  start(o);
  const uint32_t fid = session_strings().intern("cudaLaunchKernel");
  for (int wave = 0; wave < 20; ++wave) {  // 40 threads through 6 buffers
    std::thread a([&] { for (int n = 0; n < 100; ++n) ApiCallScope(fid).finish(0); });
    std::thread b([&] { for (int n = 0; n < 100; ++n) ApiCallScope(fid).finish(0); });
    a.join();
    b.join();
    // The writer drains and recycles exited threads' buffers on its own.
    for (int waited = 0; free_thread_buffers() < 6 && waited < 5000; ++waited)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(free_thread_buffers(), 6u) << "wave " << wave;
  }
  const auto t = stop_and_read();
  EXPECT_EQ(t.api_calls.size(), 4000u);
  EXPECT_EQ(t.summary.dropped_total(), 0u);
}

TEST_F(SessionTest, ApiCallTimesLieWithinTheCall) {
  start(quiet_options());
  const uint32_t fid = session_strings().intern("cudaDeviceSynchronize");
  std::vector<std::pair<uint64_t, uint64_t>> brackets;
  for (int i = 0; i < 50; ++i) {
    const uint64_t before = monotonic_ns();
    {
      ApiCallScope scope(fid);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      scope.finish(0);
    }
    brackets.emplace_back(before, monotonic_ns());
  }
  const auto t = stop_and_read();
  ASSERT_EQ(t.api_calls.size(), brackets.size());
  for (size_t i = 0; i < brackets.size(); ++i) {
    const auto& c = t.api_calls[i];
    // Tick-stamped or not, a call lies inside the bracket (2 us of slack for
    // the tick conversion and a preempted thread) and lasts the 200 us sleep.
    EXPECT_GE(c.start_ns() + 2000, brackets[i].first) << i;
    EXPECT_LE(c.start_ns() + c.duration_ns(), brackets[i].second + 2000) << i;
    EXPECT_GE(c.duration_ns(), 200'000u) << i;
  }
}

TEST_F(SessionTest, NestedCallsCarryTheirDepth) {
  start(quiet_options());
  const uint32_t outer = session_strings().intern("cudaMemcpy");
  const uint32_t inner = session_strings().intern("cuMemcpyHtoD_v2");
  {
    ApiCallScope runtime_call(outer);
    { ApiCallScope(inner).finish(0); }
    runtime_call.finish(0);
  }
  const auto t = stop_and_read();
  ASSERT_EQ(t.api_calls.size(), 2u);
  EXPECT_EQ(t.api_calls[0].function_id(), inner);
  EXPECT_EQ(t.api_calls[0].depth(), 1);
  EXPECT_EQ(t.api_calls[1].function_id(), outer);
  EXPECT_EQ(t.api_calls[1].depth(), 0);
  EXPECT_GE(t.api_calls[0].start_ns(), t.api_calls[1].start_ns());
}

// A runtime call making its driver call, as the hooks see them.
void call_with_nested(uint32_t outer, uint32_t inner, uint16_t counter, int32_t result) {
  ApiCallScope runtime_call(outer);
  {
    ApiCallScope driver_call(inner, counter);
    driver_call.finish(result);
  }
  runtime_call.finish(result);
}

// The driver call under a runtime call: counted when it succeeds (the
// outer ApiCall says the rest), recorded in full when it fails.
TEST_F(SessionTest, SuccessfulNestedCallsAreCountedFailedOnesRecorded) {
  start(quiet_options());
  const uint32_t outer = session_strings().intern("cudaLaunchKernel");
  const uint32_t inner = session_strings().intern("cuLaunchKernel");
  const uint16_t counter = assign_call_counter(inner, 1);
  ASSERT_NE(counter, 0);
  for (int result : {0, 0, 0, 719}) call_with_nested(outer, inner, counter, result);
  const auto t = stop_and_read();
  ASSERT_EQ(t.api_calls.size(), 5u);  // four outer calls, the failed inner one
  EXPECT_EQ(t.api_calls[3].function_id(), inner);
  EXPECT_EQ(t.api_calls[3].result(), 719);
  EXPECT_EQ(t.api_calls[3].depth(), 1);
  EXPECT_EQ(t.api_calls[3].duration_ns(), 0u);  // not timed: the outer call has the duration
  EXPECT_GE(t.api_calls[3].start_ns(), t.api_calls[2].start_ns());
  uint64_t counted = 0;
  for (const auto& c : t.call_counts) {
    EXPECT_EQ(c.function_id(), inner);
    EXPECT_EQ(c.flags(), 1);
    EXPECT_NE(c.tid(), 0u);
    counted += c.count();
  }
  EXPECT_EQ(counted, 3u);
  EXPECT_EQ(t.summary.counted_calls, 3u);
  EXPECT_EQ(t.summary.calls_by_function.at("cuLaunchKernel"), 4u);
  EXPECT_EQ(t.summary.calls_by_function.at("cudaLaunchKernel"), 4u);
}

// Counts of a thread that exits are written before its slot is reused, and
// a thread that takes the slot over starts from zero.
TEST_F(SessionTest, CountsOfExitedThreadsAreKeptOnce) {
  start(quiet_options());
  const uint32_t outer = session_strings().intern("cudaMemcpy");
  const uint32_t inner = session_strings().intern("cuMemcpyHtoD_v2");
  const uint16_t counter = assign_call_counter(inner, 1);
  for (int round = 0; round < 3; ++round) {
    std::thread([&] {
      for (int i = 0; i < 10; ++i) call_with_nested(outer, inner, counter, 0);
    }).join();
    std::this_thread::sleep_for(std::chrono::milliseconds(15));  // the writer recycles the slot
  }
  const auto t = stop_and_read();
  EXPECT_EQ(t.summary.calls_by_function.at("cuMemcpyHtoD_v2"), 30u);
  EXPECT_EQ(t.summary.counted_calls, 30u);
  EXPECT_EQ(t.api_calls.size(), 30u);  // the outer calls only
}

// An outermost call is always recorded, counter or not.
TEST_F(SessionTest, OutermostCallsAreNeverOnlyCounted) {
  start(quiet_options());
  const uint32_t fid = session_strings().intern("cuMemAlloc_v2");
  const uint16_t counter = assign_call_counter(fid, 1);
  {
    ApiCallScope call(fid, counter);
    call.finish(0);
  }
  const auto t = stop_and_read();
  EXPECT_EQ(t.api_calls.size(), 1u);
  EXPECT_TRUE(t.call_counts.empty());
}

TEST_F(SessionTest, InternalCodeIsNotRecorded) {
  start(quiet_options());
  {
    InternalScope internal;
    EXPECT_FALSE(record(fb::ApiCall()));
  }
  EXPECT_TRUE(record(fb::ApiCall()));
  const auto t = stop_and_read();
  EXPECT_EQ(t.api_calls.size(), 1u);
}

TEST_F(SessionTest, ASecondSessionWritesACompleteNewFile) {
  start(quiet_options());
  const uint32_t fid = session_strings().intern("cudaFree");
  ApiCallScope(fid).finish(0);
  const auto first = stop_and_read();
  ASSERT_EQ(first.api_calls.size(), 1u);
  path_ = dir_.file("second.gpuscope");
  std::string error;
  ASSERT_TRUE(start_session(quiet_options(), path_, collect_process_metadata(), &error)) << error;
  ApiCallScope(fid).finish(0);
  const auto second = stop_and_read();
  ASSERT_EQ(second.api_calls.size(), 1u);
  // Strings interned during the first session are repeated in the new file.
  EXPECT_EQ(second.summary.calls_by_function.at("cudaFree"), 1u);
}

TEST_F(SessionTest, CpuSamplerSeesThreadsThatNeverCallCuda) {
  SessionOptions o = quiet_options();
  o.cpu_sample_interval_ms = 5;
  start(o);
  std::atomic<bool> done{false};
  std::thread busy([&] {
    pthread_setname_np(pthread_self(), "busy-worker");
    volatile uint64_t x = 0;
    timespec cpu{};
    do {  // burn 150 ms of this thread's CPU time, however loaded the machine
      for (int i = 0; i < 100000; ++i) x = x + 1;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    } while (cpu.tv_sec == 0 && cpu.tv_nsec < 150'000'000);
    done = true;
  });
  busy.join();
  const auto t = stop_and_read();
  bool named = false;
  for (const auto& m : t.markers)
    if (m.kind() == fb::MarkerKind::ThreadName && t.summary.strings.at(m.name_id()) == "busy-worker") named = true;
  EXPECT_TRUE(named);
  uint64_t process_cpu = 0;
  for (const auto& s : t.cpu_samples)
    if (s.tid() == 0) process_cpu = std::max<uint64_t>(process_cpu, s.cpu_ns());
  EXPECT_GE(process_cpu, 150'000'000u);  // at least what the busy thread burned
}

}  // namespace
}  // namespace gpuscope::capture
