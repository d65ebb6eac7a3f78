// Co-tenants nobody traced (driver_tenants.h): the driver's per-process
// utilization samples in the service's own trace become tenants whose busy
// time is their share of each sample's window, on the service's GPUs only,
// and only when a sample names the service itself.
#include <gtest/gtest.h>

#include <vector>

#include "driver_tenants.h"

namespace gpuscope::analyzer {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr int kService = 100;

fb::ProcessGpuSample sample(uint64_t end_ms, uint32_t window_ms, uint32_t pid, uint8_t sm, uint16_t device = 0,
                            uint8_t memory = 0) {
  return fb::ProcessGpuSample(end_ms * kMs, static_cast<uint32_t>(window_ms * kMs), pid, device, sm, memory, 0, 0, 0, 0);
}

reader::TraceSummary service() {
  reader::TraceSummary s;
  s.process.emplace();
  s.process->pid = kService;
  s.process->boot_id = "boot-1";
  return s;
}

GpuTenants tenants_from(const std::vector<fb::ProcessGpuSample>& samples, RequestLatency::DriverSamples* status,
                        const std::vector<int>& traced = {}) {
  DriverSampleReader reader;
  reader::ChunkView v;
  v.process_gpu_samples = samples;
  reader.add(v);
  return reader.tenants(service(), traced, status);
}

TEST(DriverTenants, AnotherProcessIsBusyForItsShareOfEachWindow) {
  RequestLatency::DriverSamples status;
  const GpuTenants t = tenants_from({sample(1010, 10, kService, 30), sample(1010, 10, 7, 50),
                                     sample(1020, 10, kService, 30), sample(1020, 10, 7, 0, 0, 80)},
                                    &status);
  EXPECT_EQ(status.samples, 4u);
  EXPECT_TRUE(status.named_self);
  EXPECT_EQ(status.other_processes, 1u);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].pid, 7);
  EXPECT_EQ(t[0].busy_from, BusyFrom::DriverSamples);
  EXPECT_EQ(t[0].boot_id, "boot-1");  // the service's host and boot: its samples
  EXPECT_EQ(t[0].sample_window_ns, 10 * kMs);
  EXPECT_EQ(t[0].busy_within(1000 * kMs, 1010 * kMs), 5 * kMs);  // 50 % of the first window
  EXPECT_EQ(t[0].busy_within(1010 * kMs, 1020 * kMs), 8 * kMs);  // memory 80 %, the larger share
  EXPECT_EQ(t[0].busy_within(1005 * kMs, 1015 * kMs), 2'500'000u + 4 * kMs);
  EXPECT_EQ(t[0].busy_within(1030 * kMs, 1040 * kMs), 0u);
}

TEST(DriverTenants, OnlyTheServicesGpusAndOnlyUntracedProcessesCount) {
  RequestLatency::DriverSamples status;
  const GpuTenants t = tenants_from({sample(1010, 10, kService, 30, 1), sample(1010, 10, 7, 90, 0),
                                     sample(1010, 10, 8, 90, 1), sample(1010, 10, 9, 90, 1)},
                                    &status, {9});
  ASSERT_EQ(t.size(), 1u);  // 7 is on another GPU, 9 has a trace of its own
  EXPECT_EQ(t[0].pid, 8);
}

TEST(DriverTenants, SamplesThatNeverNameTheServiceAreNotUsed) {
  RequestLatency::DriverSamples status;
  // A service in a container: the driver knows it under its host pid.
  const GpuTenants t = tenants_from({sample(1010, 10, 4242, 30), sample(1010, 10, 7, 90)}, &status);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(status.samples, 2u);
  EXPECT_FALSE(status.named_self);
  RequestLatency::DriverSamples none;
  EXPECT_TRUE(tenants_from({}, &none).empty());
  EXPECT_EQ(none.samples, 0u);
}

TEST(DriverTenants, OverlappingWindowsOnTwoGpusAreCountedOnce) {
  RequestLatency::DriverSamples status;
  const GpuTenants t = tenants_from({sample(1010, 10, kService, 10, 0), sample(1010, 10, kService, 10, 1),
                                     sample(1010, 10, 7, 100, 0), sample(1015, 10, 7, 100, 1)},
                                    &status);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].busy_within(0, 2000 * kMs), 15 * kMs);  // [1000, 1010) and [1010, 1015): 15 ms, not 20
}

}  // namespace
}  // namespace gpuscope::analyzer
