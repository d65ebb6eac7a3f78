// Other processes on the same GPU in the whole run (docs/rules.md, "The
// whole run, too"): the model sums the busy time the driver's per-process
// samples charge to each pid, the metrics turn it into the other processes'
// share on the GPUs a sample named this process on, and NVML's GPU-wide
// utilization is scaled to this process's part from 10 % on.
#include <gtest/gtest.h>

#include "../support/model_of.h"
#include "../support/sample_trace.h"
#include "metrics.h"

namespace gpuscope::test {
namespace {

constexpr uint64_t kT0 = 5'000'000'000, kMs = 1'000'000;
constexpr uint32_t kSelf = 9;

fb::ProcessGpuSample sample(uint64_t end_ms, uint32_t pid, uint8_t sm, uint8_t memory = 0, uint16_t device = 0) {
  return fb::ProcessGpuSample(kT0 + end_ms * kMs, static_cast<uint32_t>(50 * kMs), pid, device, sm, memory, 0, 0, 0,
                              0);
}

fb::GpuSample busy_sample(uint64_t at_ms, uint8_t util_pct) {
  const auto valid = static_cast<uint32_t>(fb::GpuSampleField::Utilization);
  return fb::GpuSample(kT0 + at_ms * kMs, 0, 0, 0, 0, 0, valid, 0, 0, 0, 0, util_pct, 0, 0, 0, 0, 0);
}

// A run of 1 s on GPU 0 at 80 % by NVML, with the driver's samples of this
// process and `others` (pid, SM %, memory %) every 50 ms; pid 7 also has
// GPU 1, where this process never ran.
std::vector<uint8_t> shared_trace(uint8_t self_pct, const std::vector<std::tuple<uint32_t, uint8_t, uint8_t>>& others,
                                  uint32_t self_pid_in_samples = kSelf) {
  capture::ProcessMetadata meta;
  meta.pid = kSelf;
  meta.exe = "/srv/tokenizer";
  meta.start_monotonic_ns = kT0;
  return one_frame_trace(meta, kT0 + 1000 * kMs, [&](capture::ChunkBuilder& b) {
    for (uint64_t ms = 50; ms <= 1000; ms += 50) {
      b.add(busy_sample(ms, 80));
      b.add(sample(ms, self_pid_in_samples, self_pct));
      for (const auto& [pid, sm, memory] : others) b.add(sample(ms, pid, sm, memory));
      b.add(sample(ms, 7, 100, 0, 1));
    }
    b.add_gpu_process({7, 0, "batch_embed"});
  });
}

TEST(OtherProcesses, TheModelSumsEachPidsBusyTimePerGpu) {
  const analyzer::TraceModel m = model_of(shared_trace(20, {{7, 30, 60}, {8, 0, 0}}));
  ASSERT_EQ(m.driver_busy_ns.count(0), 1u);
  // 20 samples of 50 ms: 20 % of 1 s for this process, memory's 60 % (the larger share) for pid 7.
  EXPECT_NEAR(m.driver_busy_ns.at(0).at(kSelf), 200.0 * kMs, 1);
  EXPECT_NEAR(m.driver_busy_ns.at(0).at(7), 600.0 * kMs, 1);
  EXPECT_EQ(m.driver_busy_ns.at(0).at(8), 0);
  EXPECT_NEAR(m.driver_busy_ns.at(1).at(7), 1000.0 * kMs, 1);
  EXPECT_EQ(m.gpu_process_names.at(7), "batch_embed");
}

TEST(OtherProcesses, NvmlBusyIsThisProcesssPartWhenOthersHoldTheGpu) {
  const analyzer::Metrics x = analyzer::compute_metrics(model_of(shared_trace(20, {{7, 30, 60}, {8, 0, 0}})));
  ASSERT_TRUE(x.other_processes_share.has_value());
  // GPU 1 is not this process's: only GPU 0's 200 ms against 600 ms count.
  EXPECT_NEAR(*x.other_processes_share, 0.75, 1e-9);
  EXPECT_EQ(x.busiest_other_process, "pid 7 (batch_embed)");
  EXPECT_EQ(x.other_processes, 1u);  // pid 8 was listed, never busy
  EXPECT_EQ(x.gpu_busy_source, "nvml");
  ASSERT_TRUE(x.nvml_gpu_util_all.has_value());
  EXPECT_NEAR(*x.nvml_gpu_util_all, 0.80, 1e-9);
  EXPECT_NEAR(*x.gpu_util, 0.20, 1e-9);
  EXPECT_NEAR(*x.nvml_gpu_util, 0.80, 1e-9);  // the GPU-wide mean stays as it was read
}

TEST(OtherProcesses, AFewPercentOfOthersOrNoSampleNamingThisProcessChangeNothing) {
  // 5 % of the busy time: under kOtherProcessesShare, NVML's figure stays this process's.
  const analyzer::Metrics few = analyzer::compute_metrics(model_of(shared_trace(95, {{7, 5, 0}})));
  ASSERT_TRUE(few.other_processes_share.has_value());
  EXPECT_NEAR(*few.other_processes_share, 0.05, 1e-9);
  EXPECT_FALSE(few.nvml_gpu_util_all.has_value());
  EXPECT_NEAR(*few.gpu_util, 0.80, 1e-9);
  // A process in a container: the driver names it by another pid, so no one can be told apart.
  const analyzer::Metrics hidden = analyzer::compute_metrics(model_of(shared_trace(20, {{7, 60, 0}}, 4242)));
  EXPECT_FALSE(hidden.other_processes_share.has_value());
  EXPECT_NEAR(*hidden.gpu_util, 0.80, 1e-9);
  EXPECT_TRUE(hidden.busiest_other_process.empty());
}

}  // namespace
}  // namespace gpuscope::test
