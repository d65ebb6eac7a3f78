// The per-process utilization sampler (process_sampler.h) against a fake
// NVML: the size query then the samples, the driver's realtime microsecond
// stamps moved onto CLOCK_MONOTONIC, each sample's window since the one
// before, lastSeenTimeStamp handed back, names asked once per process, and
// a driver that does not answer.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "clock.h"
#include "gpu/process_sampler.h"

namespace gpuscope::gpu {
namespace {

// What the fake driver holds, and what it was asked.
struct FakeDriver {
  std::vector<nvml::ProcessUtilizationSample> samples;
  nvml::Return answer = nvml::kSuccess;
  std::vector<unsigned long long> last_seen_asked;
  int names_asked = 0;
};
FakeDriver* g_driver = nullptr;

nvml::Return process_utilization(nvml::Device, nvml::ProcessUtilizationSample* out, unsigned* count,
                                 unsigned long long last_seen) {
  if (g_driver->answer != nvml::kSuccess) return g_driver->answer;
  std::vector<nvml::ProcessUtilizationSample> newer;
  for (const auto& s : g_driver->samples)
    if (s.timestamp_us > last_seen) newer.push_back(s);
  if (newer.empty()) return nvml::kNotFound;
  if (out == nullptr || *count < newer.size()) {
    *count = static_cast<unsigned>(newer.size());
    return nvml::kInsufficientSize;
  }
  g_driver->last_seen_asked.push_back(last_seen);
  std::memcpy(out, newer.data(), newer.size() * sizeof newer[0]);
  *count = static_cast<unsigned>(newer.size());
  return nvml::kSuccess;
}

nvml::Return process_name(unsigned pid, char* name, unsigned length) {
  ++g_driver->names_asked;
  std::snprintf(name, length, "job%u", pid);
  return nvml::kSuccess;
}

class ProcessSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_driver = &driver_;
    api_.device_get_process_utilization = process_utilization;
    api_.system_get_process_name = process_name;
  }
  void TearDown() override { g_driver = nullptr; }

  // A driver stamp `ago_ms` before now on the realtime clock.
  static unsigned long long stamp_ago(uint64_t ago_ms) { return (capture::realtime_ns() - ago_ms * 1'000'000) / 1000; }

  FakeDriver driver_;
  nvml::Api api_;
};

TEST_F(ProcessSamplerTest, StampsMoveOntoTheMonotonicClockWithTheirWindows) {
  const uint64_t start = capture::monotonic_ns() - 100'000'000;  // capture began 100 ms ago
  ProcessSampler sampler(api_, nullptr, 2, start);
  const unsigned long long tick = stamp_ago(40);
  driver_.samples = {{7, tick, 60, 10, 0, 0}, {100, tick, 20, 5, 0, 0}, {7, stamp_ago(20), 30, 0, 0, 0}};
  ProcessFindings found;
  const uint64_t before = capture::monotonic_ns();
  sampler.poll(found);
  ASSERT_EQ(found.samples.size(), 3u);
  const auto& first = found.samples[0];
  EXPECT_EQ(first.device(), 2);
  EXPECT_EQ(first.flags(), 0);
  // 40 ms ago, give or take the test's own time.
  EXPECT_NEAR(static_cast<double>(before - first.start_ns()) / 1e6, 40.0, 15.0);
  EXPECT_NEAR(first.window_ns() / 1e6, 60.0, 15.0);  // since capture start
  EXPECT_EQ(found.samples[1].start_ns(), first.start_ns());  // one driver tick: one stamp, one window
  EXPECT_EQ(found.samples[1].window_ns(), first.window_ns());
  EXPECT_NEAR(found.samples[2].window_ns() / 1e6, 20.0, 1.0);
  EXPECT_EQ(found.samples[2].sm_util_pct(), 30);
  ASSERT_EQ(found.names.size(), 2u);  // 7 and 100, once each
  EXPECT_EQ(found.names[0].name, "job7");
  EXPECT_EQ(driver_.names_asked, 2);
  // The next poll asks only for what is newer than the last stamp taken.
  ProcessFindings again;
  sampler.poll(again);
  EXPECT_TRUE(again.samples.empty());
  driver_.samples.push_back({7, stamp_ago(0) + 1, 100, 0, 0, 0});
  sampler.poll(again);
  ASSERT_EQ(again.samples.size(), 1u);
  EXPECT_TRUE(again.names.empty());
  EXPECT_EQ(driver_.last_seen_asked.back(), driver_.samples[2].timestamp_us);
}

TEST_F(ProcessSamplerTest, StampsBeforeTheCaptureAreNotAskedFor) {
  driver_.samples = {{7, stamp_ago(5000), 90, 0, 0, 0}};
  ProcessSampler sampler(api_, nullptr, 0, capture::monotonic_ns());
  ProcessFindings found;
  sampler.poll(found);
  EXPECT_TRUE(found.samples.empty());
}

TEST_F(ProcessSamplerTest, AStampFarFromThePollIsReplacedByThePollsTime) {
  ProcessSampler sampler(api_, nullptr, 0, capture::monotonic_ns() - 1'000'000);
  driver_.samples = {{7, stamp_ago(0) + 3'600'000'000ull, 50, 0, 0, 0}};  // an hour ahead
  ProcessFindings found;
  const uint64_t before = capture::monotonic_ns();
  sampler.poll(found);
  ASSERT_EQ(found.samples.size(), 1u);
  EXPECT_EQ(found.samples[0].flags(), 1);
  EXPECT_GE(found.samples[0].start_ns(), before);
}

TEST_F(ProcessSamplerTest, ADriverWithoutPerProcessUtilizationIsSaidOnce) {
  driver_.answer = nvml::kNotSupported;
  ProcessSampler sampler(api_, nullptr, 0, capture::monotonic_ns());
  ProcessFindings found;
  sampler.poll(found);
  EXPECT_NE(sampler.unsupported().find("nvmlDeviceGetProcessUtilization"), std::string::npos);
  nvml::Api missing;
  ProcessSampler without(missing, nullptr, 0, capture::monotonic_ns());
  without.poll(found);
  EXPECT_NE(without.unsupported().find("nvmlDeviceGetProcessUtilization"), std::string::npos);
  EXPECT_TRUE(found.samples.empty());
}

}  // namespace
}  // namespace gpuscope::gpu
