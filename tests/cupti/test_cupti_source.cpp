// Device collection through a real capture session, read back by the
// reader: a fake CUPTI hands the collector hand-built Kernel10/Memcpy6
// buffers, the API callback fires inside a recorded host call, and the
// trace must hold the device records, linked to that call, plus the
// collection status. Also: a session whose injection never came.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "activity_buffer.h"
#include "activity_convert.h"
#include "clock.h"
#include "collector.h"
#include "cupti_source.h"
#include "fake_cupti.h"
#include "recorder.h"
#include "session.h"
#include "../support/temp_dir.h"
#include "../support/trace_contents.h"

namespace gpuscope::cupti {
namespace {

using test::ActivityBuffer;
using test::fake;
using test::make_fake_api;
using State = fb::DeviceCollectionState;

CUpti_ActivityKernel10 kernel(uint64_t start, uint32_t correlation) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start, k.end = start + 40'000;
  k.streamId = 13, k.correlationId = correlation, k.deviceId = 0;
  k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
  k.name = "_Z6kernelv";
  return k;
}

std::vector<uint8_t> bytes_of(ActivityBuffer& b) {
  std::vector<uint8_t> out(1 << 16);
  out.resize(b.copy_into(out.data(), out.size()));
  return out;
}

class CuptiSourceTest : public ::testing::Test {
 protected:
  capture::SessionOptions session_options() {
    capture::SessionOptions so;
    so.cpu_sample_interval_ms = 0;
    so.drain_interval_ms = 5;
    so.flush_interval_ms = 20;
    return so;
  }
  std::string start(capture::TraceSource* source) {
    const std::string path = dir_.file("trace-" + std::to_string(++traces_) + ".gpuscope");
    std::string error;
    EXPECT_TRUE(capture::start_session(session_options(), path, capture::collect_process_metadata(), &error,
                                       {source}))
        << error;
    return path;
  }
  struct SampledRun {
    uint64_t began = 0, work = 0, ended = 0;  // collection's start, the kernel's, the session's end
    gpuscope::test::TraceContents trace;
  };
  SampledRun run_sampled(std::chrono::milliseconds idle, std::chrono::milliseconds after);
  gpuscope::test::TempDir dir_;
  int traces_ = 0;
};

TEST_F(CuptiSourceTest, DeviceRecordsLinkToTheirHostCallAndTheForcedFlushLandsBeforeTheEnd) {
  const CuptiApi api = make_fake_api();
  Collector collector;
  auto source = make_cupti_source(collector, "no driver");
  const std::string path = start(source.get());
  ASSERT_TRUE(collector.start(api, "/fake/libcupti.so.13"));
  fake().dropped_per_completion = 2;

  // A hooked call; CUPTI's API callback fires inside it (runtime, then the
  // nested driver call with its own id).
  uint64_t host_correlation = 0;
  {
    capture::ApiCallScope call(uint32_t{1});
    ASSERT_TRUE(call.active());
    host_correlation = call.correlation_id();
    fake().api_enter(CUPTI_CB_DOMAIN_RUNTIME_API, 41);
    fake().api_enter(CUPTI_CB_DOMAIN_DRIVER_API, 42);
    call.finish(0);
  }
  fake().api_enter(CUPTI_CB_DOMAIN_DRIVER_API, 43);  // outside any hooked call: unknown
  const uint64_t t0 = capture::monotonic_ns();
  ActivityBuffer first;
  first.add(kernel(t0, 41));
  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 1 << 20, copy.start = t0 + 50'000, copy.end = t0 + 90'000, copy.correlationId = 42;
  first.add(copy);
  first.add(kernel(t0 + 100'000, 0));  // replayed by a CUDA graph: no API call
  CUpti_ActivityOverhead3 overhead{};
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  first.add(overhead);  // counted, not converted
  ASSERT_TRUE(fake().hand_out(bytes_of(first)));
  fake().complete_all();  // a buffer CUPTI completed during the run
  // One still being filled at the end: only the forced flush brings it.
  ActivityBuffer last;
  last.add(kernel(t0 + 200'000, 43));
  ASSERT_TRUE(fake().hand_out(bytes_of(last)));

  capture::stop_session(fb::EndKind::Exit, 0);
  const auto t = gpuscope::test::read_trace_file(path);
  ASSERT_TRUE(t.opened) << t.error;
  ASSERT_EQ(t.kernels.size(), 3u);
  ASSERT_EQ(t.copies.size(), 1u);
  std::vector<uint64_t> kernel_correlations;
  for (const auto& k : t.kernels) {
    EXPECT_EQ(k.source(), fb::Source::Device);
    EXPECT_EQ(t.summary.name_of(k.name_id()), "_Z6kernelv");
    kernel_correlations.push_back(k.correlation_id());
  }
  std::sort(kernel_correlations.begin(), kernel_correlations.end());
  EXPECT_EQ(kernel_correlations, (std::vector<uint64_t>{0, 0, host_correlation}));
  EXPECT_EQ(t.copies[0].correlation_id(), host_correlation) << "the driver-level id maps to the same call";
  EXPECT_EQ(t.copies[0].start_ns(), t0 + 50'000);  // the timestamp callback: CUPTI time is monotonic
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.api_calls[0].correlation_id(), host_correlation);

  ASSERT_TRUE(t.summary.device_collection.has_value());
  const auto& d = *t.summary.device_collection;
  EXPECT_EQ(d.state, static_cast<uint8_t>(State::Active));
  EXPECT_EQ(d.records, 4u);
  EXPECT_EQ(d.uncorrelated, 2u);
  EXPECT_EQ(d.unconverted, 1u);
  EXPECT_EQ(d.dropped, 4u);
  EXPECT_EQ(d.cupti_path, "/fake/libcupti.so.13");
  EXPECT_EQ(d.clock, static_cast<uint8_t>(fb::DeviceClock::TimestampCallback));
  EXPECT_TRUE(fake().enabled.empty()) << "capture end disables every kind";
}

// The DeviceWindow markers of a trace, in time order, each checked to name
// the schedule.
std::vector<std::pair<uint64_t, uint64_t>> device_windows(const gpuscope::test::TraceContents& t,
                                                          const std::string& schedule) {
  std::vector<std::pair<uint64_t, uint64_t>> windows;
  for (const auto& m : t.markers) {
    if (m.kind() != fb::MarkerKind::DeviceWindow) continue;
    EXPECT_EQ(t.summary.name_of(m.name_id()), schedule);
    windows.emplace_back(m.start_ns(), m.start_ns() + m.duration_ns());
  }
  std::sort(windows.begin(), windows.end());
  return windows;
}

// CUPTI completing a buffer that holds one kernel, as the program's first
// device work.
void deliver_a_kernel() {
  ActivityBuffer work;
  work.add(kernel(capture::monotonic_ns(), 0));
  ASSERT_TRUE(fake().hand_out(bytes_of(work)));
  fake().complete_all();
}

// A session sampled 20 ms every 60 ms on the fake CUPTI: `idle` without
// device work after collection starts, one kernel, then `after` until the
// session ends, which leaves nothing enabled.
CuptiSourceTest::SampledRun CuptiSourceTest::run_sampled(std::chrono::milliseconds idle,
                                                         std::chrono::milliseconds after) {
  const CuptiApi api = make_fake_api();
  Collector collector;
  collector.set_sampling(20'000'000, 60'000'000, "20 ms every 60 ms");
  auto source = make_cupti_source(collector, "no driver");
  const std::string path = start(source.get());
  SampledRun run;
  EXPECT_TRUE(collector.start(api, "/fake/libcupti.so.13"));
  run.began = collector.started_ns();
  std::this_thread::sleep_for(idle);
  run.work = capture::monotonic_ns();
  deliver_a_kernel();
  std::this_thread::sleep_for(after);
  capture::stop_session(fb::EndKind::Exit, 0);
  run.ended = capture::monotonic_ns();
  EXPECT_TRUE(fake().enabled.empty());
  run.trace = gpuscope::test::read_trace_file(path);
  return run;
}

// Sampled tracing on the writer's clock: windows of at least their length,
// opening a period apart, each a DeviceWindow marker naming the schedule;
// the last one closes when collection ends, and nothing is left enabled.
TEST_F(CuptiSourceTest, SampledTracingWritesItsWindows) {
  const SampledRun run = run_sampled(std::chrono::milliseconds(0), std::chrono::milliseconds(250));
  const auto& t = run.trace;
  ASSERT_TRUE(t.opened) << t.error;
  const auto windows = device_windows(t, "20 ms every 60 ms");
  ASSERT_GE(windows.size(), 3u) << "250 ms of a 60 ms period";
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(windows.front().first, t.kernels[0].start_ns()) << "the first window opens with the first device work";
  EXPECT_GE(windows.front().first, run.began);
  for (size_t i = 0; i + 1 < windows.size(); ++i) {
    EXPECT_GE(windows[i].second - windows[i].first, 20'000'000u) << "window " << i;
    EXPECT_GE(windows[i + 1].first, windows[i].first + 60'000'000) << "window " << i + 1 << " opened early";
    EXPECT_LT(windows[i].second, windows[i + 1].first) << "windows " << i << " and " << i + 1 << " overlap";
  }
  EXPECT_LE(windows.back().second, run.ended);
}

// A program that starts CUDA and queues its first work later (a service
// waiting for its first request, a script still importing) gets its first
// window over that work, not over the wait: the window stays open until
// device records arrive and then runs its length.
TEST_F(CuptiSourceTest, TheFirstWindowLastsUntilDeviceWorkHasBeenSeenForItsLength) {
  // 2.5 periods without device work, then 150 ms after it.
  const SampledRun run = run_sampled(std::chrono::milliseconds(150), std::chrono::milliseconds(150));
  const auto& t = run.trace;
  ASSERT_TRUE(t.opened) << t.error;
  ASSERT_EQ(t.kernels.size(), 1u);
  const auto windows = device_windows(t, "20 ms every 60 ms");
  ASSERT_GE(windows.size(), 2u) << "150 ms after the work, of a 60 ms period";
  EXPECT_GE(windows.front().first, run.began + 150'000'000) << "the wait before the first work is in no window";
  EXPECT_EQ(windows.front().first, t.kernels[0].start_ns());
  EXPECT_GE(windows.front().second, run.work + 20'000'000) << "the first window ran its length after the work";
  EXPECT_GE(windows[1].first, run.work + 60'000'000) << "the period counts from the work too";
}

// Standby: CUDA (and CUPTI) started before any attach; each attach is one
// trace whose end flushes without finishing collection, so the next attach
// collects again. Work that completes between attaches is in neither trace.
TEST_F(CuptiSourceTest, EachAttachGetsTheDeviceRecordsOfItsOwnWindow) {
  using Hold = Collector::Hold;
  const CuptiApi api = make_fake_api();
  Collector collector;
  ASSERT_TRUE(collector.hold(Hold::Window));  // standby: no window open
  ASSERT_TRUE(collector.start(api, "/fake/libcupti.so.13"));
  EXPECT_TRUE(fake().enabled.empty());
  const auto attach = [&](uint64_t kernel_start) {
    auto source = make_cupti_source(collector, "no driver", TraceEnd::FlushForNextTrace);
    const std::string path = start(source.get());
    EXPECT_TRUE(collector.release(Hold::Window));
    EXPECT_FALSE(fake().enabled.empty()) << "collecting while attached";
    ActivityBuffer work;
    work.add(kernel(kernel_start, 0));
    EXPECT_TRUE(fake().hand_out(bytes_of(work)));  // still being filled at the detach
    capture::stop_session(fb::EndKind::Detached, 0);
    EXPECT_TRUE(collector.hold(Hold::Window));
    EXPECT_TRUE(fake().enabled.empty()) << "off between attaches";
    return gpuscope::test::read_trace_file(path);
  };
  const uint64_t first_start = capture::monotonic_ns();
  const auto first = attach(first_start);
  ActivityBuffer between;
  between.add(kernel(capture::monotonic_ns(), 0));
  ASSERT_TRUE(fake().hand_out(bytes_of(between)));
  fake().complete_all();  // CUPTI's periodic flush while detached
  const uint64_t second_start = capture::monotonic_ns();
  const auto second = attach(second_start);
  EXPECT_EQ(collector.finished_ns(), 0u);
  for (const auto* t : {&first, &second}) {
    ASSERT_TRUE(t->opened) << t->error;
    ASSERT_TRUE(t->summary.device_collection.has_value());
    EXPECT_EQ(t->summary.device_collection->state, static_cast<uint8_t>(State::Active));
  }
  ASSERT_EQ(first.kernels.size(), 1u) << "the forced flush at the detach brought its kernel in";
  EXPECT_EQ(first.kernels[0].start_ns(), first_start);
  ASSERT_EQ(second.kernels.size(), 1u) << "the kernel completed between attaches is in neither";
  EXPECT_EQ(second.kernels[0].start_ns(), second_start);
  collector.finish();
}

TEST_F(CuptiSourceTest, WithoutInjectionTheTraceSaysWhy) {
  Collector collector;
  auto source = make_cupti_source(collector, "no driver");
  const std::string path = start(source.get());
  capture::stop_session(fb::EndKind::Exit, 0);
  const auto t = gpuscope::test::read_trace_file(path);
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_EQ(t.summary.device_collection->state, static_cast<uint8_t>(State::NotInjected));
  EXPECT_EQ(t.summary.device_collection->reason, "no driver");
  EXPECT_TRUE(t.kernels.empty());
}

TEST_F(CuptiSourceTest, AnIncompatibleCuptiIsRecordedInTheTrace) {
  const CuptiApi api = make_fake_api();
  fake().version = 120800;
  Collector collector;
  auto source = make_cupti_source(collector, "no driver");
  const std::string path = start(source.get());
  EXPECT_FALSE(collector.start(api, "/fake/libcupti.so.12"));
  capture::stop_session(fb::EndKind::Exit, 0);
  const auto t = gpuscope::test::read_trace_file(path);
  ASSERT_TRUE(t.summary.device_collection.has_value());
  EXPECT_EQ(t.summary.device_collection->state, static_cast<uint8_t>(State::IncompatibleVersion));
  EXPECT_EQ(t.summary.device_collection->cupti_version, 120800u);
}

}  // namespace
}  // namespace gpuscope::cupti
