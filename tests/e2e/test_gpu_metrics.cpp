// GPU evidence end to end: samples under `gpuscope run` on simgpu, whose
// NVML follows its device model (busy while kernels run, DRAM bandwidth
// high only for memory-heavy kernels), the device description, the nodes
// that change what NVML says, and the probe on this machine without simgpu.
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "e2e_support.h"
#include "../support/simgpu_segment.h"

namespace gpuscope::test {
namespace {

using fb::GpuSampleField;

bool has(const fb::GpuSample& s, GpuSampleField f) { return (s.valid() & static_cast<uint32_t>(f)) != 0; }

std::string node(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR) + "/samples/simgpu/nodes/" + name;
}


// `program args...` under `gpuscope run` on simgpu, with NVML sampled at
// 50 Hz; `env` adds to the environment (SIMGPU_NODE=...).
class GpuMetricsTest : public ::testing::Test {
 protected:
  Traced run_traced(const std::vector<std::string>& program, std::vector<std::string> env = {},
                    bool simgpu = true) {
    std::vector<std::string> argv = {gpuscope_exe(), "run", "-q", "-o", dir_.path(), "--"};
    argv.insert(argv.end(), program.begin(), program.end());
    // Our own simgpu segment: other tests' simulated kernels stay out of NVML.
    static int runs = 0;
    shared_id_ = "gpuscope-e2e-" + std::to_string(getpid()) + "-" + std::to_string(++runs);
    env.push_back("SIMGPU_SHARED_ID=" + shared_id_);
    if (std::none_of(env.begin(), env.end(), [](const auto& e) { return e.starts_with("GPUSCOPE_NVML_HZ="); }))
      env.push_back("GPUSCOPE_NVML_HZ=50");
    if (simgpu) env.push_back("LD_LIBRARY_PATH=" + std::string(GPUSCOPE_SIMGPU_LIB_DIR));
    Traced t;
    t.process = run(argv, environment_with(env, simgpu ? std::vector<std::string>{} : std::vector<std::string>{
                                                                                           "LD_LIBRARY_PATH"}));
    const auto traces = traces_in(dir_.path());
    if (traces.size() == 1) {
      t.trace_path = traces[0];
      t.trace = read_trace_file(t.trace_path);
    }
    return t;
  }

  static uint8_t max_of(const std::vector<fb::GpuSample>& samples, uint8_t (fb::GpuSample::*field)() const,
                        GpuSampleField bit) {
    uint8_t m = 0;
    for (const auto& s : samples)
      if (has(s, bit)) m = std::max(m, (s.*field)());
    return m;
  }

  // Samples taken while the GPU was busy (NVML utilization >= 90%).
  static std::vector<fb::GpuSample> busy(const std::vector<fb::GpuSample>& samples) {
    std::vector<fb::GpuSample> out;
    for (const auto& s : samples)
      if (has(s, GpuSampleField::Utilization) && s.gpu_util_pct() >= 90) out.push_back(s);
    return out;
  }

  // simgpu leaves its shared-memory segment behind (by design): ours go.
  void TearDown() override {
    if (!shared_id_.empty()) remove_simgpu_segment(shared_id_);
  }

  TempDir dir_;
  std::string shared_id_;
};

TEST_F(GpuMetricsTest, ComputeBoundKernelsKeepTheGpuBusyWithLittleDramTraffic) {
  const auto t = run_traced({bin("compute_bound"), "--iters", "9000"});
  ASSERT_EQ(t.process.exit_code(), 0) << t.process.err;
  ASSERT_EQ(t.trace.summary.devices.size(), 1u);
  EXPECT_NE(t.trace.summary.devices[0].name.find("(simulated)"), std::string::npos);
  ASSERT_GE(t.trace.gpu_samples.size(), 10u);
  const auto during = busy(t.trace.gpu_samples);
  ASSERT_GE(during.size(), 5u) << "the GPU was never seen busy";
  size_t full = 0, gpm = 0;
  for (const auto& s : during) {
    if (has(s, GpuSampleField::DramBandwidth)) {
      EXPECT_LE(s.dram_bw_util_pct(), 10) << s.start_ns();
    }
    // GPM covers the 20 ms since the previous sample, NVML utilization the
    // last 167 ms: at the edges of the run they disagree, so most, not all.
    if (has(s, GpuSampleField::SmUtilization)) {
      ++gpm;
      full += s.sm_util_pct() >= 80 ? 1 : 0;
    }
    EXPECT_LE(s.memory_util_pct(), 10);
    EXPECT_GT(s.power_mw(), 600'000u);  // load power, not idle
  }
  ASSERT_GE(gpm, 3u);
  EXPECT_GE(full * 10, gpm * 8) << full << " of " << gpm << " busy samples with SM utilization >= 80%";
}

TEST_F(GpuMetricsTest, MemoryBoundKernelsSaturateDramBandwidth) {
  const auto t = run_traced({bin("memory_bound"), "--iters", "5000"});
  ASSERT_EQ(t.process.exit_code(), 0) << t.process.err;
  const auto during = busy(t.trace.gpu_samples);
  ASSERT_GE(during.size(), 5u) << "the GPU was never seen busy";
  size_t high = 0, gpm = 0;
  for (const auto& s : during) {
    if (!has(s, GpuSampleField::DramBandwidth)) continue;
    ++gpm;
    high += s.dram_bw_util_pct() >= 80 ? 1 : 0;
  }
  ASSERT_GE(gpm, 3u);
  EXPECT_GE(high * 10, gpm * 8) << high << " of " << gpm << " busy samples with DRAM bandwidth >= 80%";
  EXPECT_GE(max_of(during, &fb::GpuSample::memory_util_pct, GpuSampleField::Utilization), 80);
}

TEST_F(GpuMetricsTest, AnIdleProgramSeesAnIdleGpu) {
  const auto t = run_traced({bin("behave"), "spin:300"});
  ASSERT_EQ(t.process.exit_code(), 0) << t.process.err;
  ASSERT_GE(t.trace.gpu_samples.size(), 5u);
  EXPECT_EQ(max_of(t.trace.gpu_samples, &fb::GpuSample::gpu_util_pct, GpuSampleField::Utilization), 0);
  for (const auto& s : t.trace.gpu_samples) EXPECT_EQ(s.throttle_reasons() & 1u, 1u);  // GpuIdle
}

TEST_F(GpuMetricsTest, ThrottledNodeReportsItsClockAndEventReasons) {
  const auto t = run_traced({bin("behave"), "spin:150"}, {"SIMGPU_NODE=" + node("throttled.json")});
  ASSERT_FALSE(t.trace.gpu_samples.empty());
  for (const auto& s : t.trace.gpu_samples) {
    EXPECT_EQ(s.sm_clock_mhz(), 1095);
    EXPECT_EQ(s.throttle_reasons() & 72u, 72u);  // HW slowdown | HW thermal slowdown
  }
}

TEST_F(GpuMetricsTest, LinkTrainedBelowItsMaximumIsDescribedAsSuch) {
  const auto t = run_traced({bin("behave"), "spin:50"}, {"SIMGPU_NODE=" + node("pcie-gen3-x8.json")});
  ASSERT_EQ(t.trace.summary.devices.size(), 1u);
  const auto& d = t.trace.summary.devices[0];
  EXPECT_EQ(d.pcie_gen_current, 3);
  EXPECT_EQ(d.pcie_width_current, 8);
  EXPECT_EQ(d.pcie_gen_max, 5);
  EXPECT_EQ(d.pcie_width_max, 16);
}

// Format 1.7: what doctor reads of how a GPU is split and linked, as the trace records it.
TEST_F(GpuMetricsTest, MigLayoutIsDescribed) {
  const auto mig = run_traced({bin("behave"), "spin:50"}, {"SIMGPU_NODE=" + node("mig-enabled.json")});
  ASSERT_EQ(mig.trace.summary.devices.size(), 1u);
  EXPECT_EQ(mig.trace.summary.devices[0].mig_mode, 1);
  EXPECT_EQ(mig.trace.summary.devices[0].mig_devices, "1g.18gb x2, 3g.71gb");
  EXPECT_EQ(mig.trace.summary.devices[0].nvlinks, 0);
}

TEST_F(GpuMetricsTest, NvLinksAreDescribed) {
  const auto links = run_traced({bin("behave"), "spin:50"}, {"SIMGPU_NODE=" + node("nvlink-down.json")});
  ASSERT_EQ(links.trace.summary.devices.size(), 1u);
  const auto& d = links.trace.summary.devices[0];
  EXPECT_EQ(d.mig_devices, "");  // MIG off: no layout
  EXPECT_EQ(d.nvlinks, 18);
  EXPECT_EQ(d.nvlinks_active, 16);
  const auto info = run({gpuscope_exe(), "info", links.trace_path}, clean_env());
  EXPECT_NE(info.out.find("NVLinks: 16 of 18 up"), std::string::npos) << info.out;
}

TEST_F(GpuMetricsTest, EveryDeviceIsDescribedAndSampled) {
  const auto t = run_traced({bin("behave"), "spin:150"}, {"SIMGPU_NODE=" + node("two-devices.json")});
  ASSERT_EQ(t.trace.summary.devices.size(), 2u);
  EXPECT_NE(t.trace.summary.devices[0].uuid, t.trace.summary.devices[1].uuid);
  EXPECT_NE(t.trace.summary.devices[0].pci_bus_id, t.trace.summary.devices[1].pci_bus_id);
  size_t per_device[2] = {0, 0};
  for (const auto& s : t.trace.gpu_samples) ++per_device[std::min<uint16_t>(s.device(), 1)];
  EXPECT_GE(per_device[0], 3u);
  EXPECT_GE(per_device[1], 3u);
}

TEST_F(GpuMetricsTest, MigAndPreHopperDevicesNameWhatTheyCannotAnswer) {
  const std::string node_file = dir_.file("mig-ampere.json");
  std::ofstream(node_file) << R"json({"name": "MIG A100-like (simulated)",
                                      "devices": [{"compute_capability": [8, 0], "mig_mode": 1}]})json";
  const auto t = run_traced({bin("behave"), "spin:100"}, {"SIMGPU_NODE=" + node_file});
  ASSERT_EQ(t.trace.summary.devices.size(), 1u);
  const auto& d = t.trace.summary.devices[0];
  EXPECT_EQ(d.mig_mode, 1);
  const auto lists = [&](const std::string& name) {
    return std::find(d.unsupported.begin(), d.unsupported.end(), name) != d.unsupported.end();
  };
  EXPECT_TRUE(lists("nvmlDeviceGetUtilizationRates"));
  EXPECT_TRUE(lists("GPM metrics (nvmlGpmQueryDeviceSupport)"));
  ASSERT_FALSE(t.trace.gpu_samples.empty());
  for (const auto& s : t.trace.gpu_samples) {
    EXPECT_FALSE(has(s, GpuSampleField::Utilization));
    EXPECT_FALSE(has(s, GpuSampleField::DramBandwidth));
    EXPECT_EQ(s.dram_bw_util_pct(), 0xFF);
    EXPECT_TRUE(has(s, GpuSampleField::Clocks));
  }
}

TEST_F(GpuMetricsTest, NoDeviceNodeShowsZeroVisibleDevices) {
  const auto t = run_traced({bin("behave"), "spin:50"}, {"SIMGPU_NODE=" + node("no-device.json")});
  ASSERT_TRUE(t.trace.summary.probe.has_value());
  EXPECT_EQ(t.trace.summary.probe->nvml_status, "ok");
  EXPECT_EQ(t.trace.summary.probe->visible_devices, 0);
  EXPECT_TRUE(t.trace.summary.probe->driver_loaded);
  EXPECT_TRUE(t.trace.summary.devices.empty());
  EXPECT_TRUE(t.trace.gpu_samples.empty());
}

TEST_F(GpuMetricsTest, SamplingOffStillDescribesTheDevice) {
  const auto t = run_traced({bin("behave"), "spin:100"}, {"GPUSCOPE_NVML_HZ=0"});
  EXPECT_EQ(t.trace.summary.devices.size(), 1u);
  EXPECT_TRUE(t.trace.gpu_samples.empty());
}

TEST_F(GpuMetricsTest, WithoutSimgpuTheProbeSaysWhyTheDriverIsUnusable) {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver != nullptr) GTEST_SKIP() << "this machine has a CUDA driver";
  const auto t = run_traced({bin("behave"), "out:hi"}, {}, /*simgpu=*/false);
  EXPECT_EQ(t.process.out, "hi\n");
  ASSERT_TRUE(t.trace.summary.probe.has_value());
  const auto& p = *t.trace.summary.probe;
  EXPECT_FALSE(p.driver_loaded);
  EXPECT_EQ(p.driver_error, "libcuda.so.1: cannot open shared object file: No such file or directory");
  EXPECT_EQ(p.driver_version, -1);
  EXPECT_NE(p.nvml_status.find("libnvidia-ml.so.1: cannot open shared object file"), std::string::npos)
      << p.nvml_status;
  EXPECT_EQ(p.visible_devices, -1);
  const bool has_ctl = std::any_of(p.device_nodes.begin(), p.device_nodes.end(),
                                   [](const auto& n) { return n.path == "/dev/nvidiactl"; });
  EXPECT_TRUE(has_ctl);
}

TEST_F(GpuMetricsTest, InfoPrintsTheGpuStackCompactly) {
  const auto t = run_traced({bin("behave"), "spin:100"});
  ASSERT_FALSE(t.trace_path.empty());
  const auto r = run({gpuscope_exe(), "info", t.trace_path}, clean_env());
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_NE(r.out.find("driver:      libcuda.so.1 loads, CUDA 13.0 (13000)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvml:        ok, driver 580.82.07, 1 device(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu 0:       simgpu H200 (simulated), 140.4 GiB, PCIe Gen5 x16 (max Gen5 x16)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("MIG off, ECC on (0 corrected, 0 uncorrected)"), std::string::npos) << r.out;
  // Format 1.7: the node facts doctor compares (simgpu's default node: its limit is the board's default).
  EXPECT_NE(r.out.find("VBIOS 96.00.99.00.01, persistence mode on, power limit 700 W\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU samples"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpuscope::test
