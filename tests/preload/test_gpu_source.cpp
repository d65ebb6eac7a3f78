// The GPU source through a real capture session, read back by the reader:
// against simgpu's libnvidia-ml.so.1 and libcuda.so.1 (by absolute path:
// unit tests have no LD_LIBRARY_PATH), against missing libraries, the
// toolkit's stub driver, and fake /dev and sysfs trees.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <thread>

#include "gpu/gpu_source_options.h"
#include "clock.h"
#include "recorder.h"
#include "session.h"
#include "../support/simgpu_segment.h"
#include "../support/temp_dir.h"
#include "../support/trace_contents.h"

namespace gpuscope::gpu {
namespace {

using fb::GpuSampleField;

constexpr uint32_t bits(std::initializer_list<GpuSampleField> fields) {
  uint32_t b = 0;
  for (GpuSampleField f : fields) b |= static_cast<uint32_t>(f);
  return b;
}
constexpr uint32_t kPlainMetrics =
    bits({GpuSampleField::Utilization, GpuSampleField::MemoryUsed, GpuSampleField::PcieThroughput,
          GpuSampleField::Clocks, GpuSampleField::ThrottleReasons, GpuSampleField::Power, GpuSampleField::Temperature});
constexpr uint32_t kGpmMetrics = bits({GpuSampleField::DramBandwidth, GpuSampleField::SmUtilization});

std::string simgpu_lib(const char* name) { return std::string(GPUSCOPE_SIMGPU_LIB_DIR) + "/" + name; }

GpuSourceOptions simgpu_options() {
  GpuSourceOptions o;
  o.nvml_library = simgpu_lib("libnvidia-ml.so.1");
  o.driver_library = simgpu_lib("libcuda.so.1");
  o.nvml_hz = 100;
  return o;
}

class GpuSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // simgpu's NVML reports whatever every process on this node does; a
    // segment of our own keeps other tests' simulated kernels out.
    setenv("SIMGPU_SHARED_ID", shared_id().c_str(), 1);
    unsetenv("SIMGPU_NODE");
  }

  // simgpu leaves its shared-memory segment behind (by design); ours goes.
  // NVML keeps its mapping, so later tests of this process still see it.
  void TearDown() override { test::remove_simgpu_segment(shared_id()); }

  static std::string shared_id() { return "gpuscope-preload-test-" + std::to_string(getpid()); }

  // Runs a session with only the GPU source for `ms` and reads it back;
  // with `busy`, this thread records a CPU sample every 2 ms meanwhile, as
  // a program's hooks would record calls.
  test::TraceContents capture(const GpuSourceOptions& options, int ms, bool busy = false) {
    auto source = make_gpu_source(options);
    capture::SessionOptions so;
    so.cpu_sample_interval_ms = 0;
    so.drain_interval_ms = 5;
    so.flush_interval_ms = 20;
    const std::string path = dir_.file("trace-" + std::to_string(++traces_) + ".gpuscope");
    std::string error;
    EXPECT_TRUE(capture::start_session(so, path, capture::collect_process_metadata(), &error, {source.get()}))
        << error;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      if (busy) capture::record(fb::CpuSample(capture::monotonic_ns(), 1, 0, 1, 0));
      std::this_thread::sleep_for(std::chrono::milliseconds(busy ? 2 : ms));
    }
    capture::stop_session(fb::EndKind::Exit, 0);
    return test::read_trace_file(path);
  }

  static bool lists(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  test::TempDir dir_;
  int traces_ = 0;
};

TEST_F(GpuSourceTest, DescribesTheSimulatedDeviceAndTheStackAboveIt) {
  const auto t = capture(simgpu_options(), 50);
  ASSERT_TRUE(t.summary.probe.has_value());
  const auto& p = *t.summary.probe;
  EXPECT_EQ(p.nvml_status, "ok");
  EXPECT_EQ(p.nvml_driver_version, "580.82.07");
  EXPECT_EQ(p.visible_devices, 1);
  EXPECT_TRUE(p.driver_loaded) << p.driver_error;
  EXPECT_EQ(p.driver_version, 13000);
  ASSERT_EQ(t.summary.devices.size(), 1u);
  const auto& d = t.summary.devices[0];
  EXPECT_EQ(d.index, 0u);
  EXPECT_NE(d.name.find("(simulated)"), std::string::npos) << d.name;
  EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
  EXPECT_EQ(d.pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(d.memory_total_bytes, 143771ull << 20);
  EXPECT_EQ(d.pcie_gen_current, 5);
  EXPECT_EQ(d.pcie_gen_max, 5);
  EXPECT_EQ(d.pcie_width_current, 16);
  EXPECT_EQ(d.pcie_width_max, 16);
  EXPECT_EQ(d.mig_mode, 0);
  EXPECT_EQ(d.ecc_corrected, 0u);
  EXPECT_EQ(d.ecc_uncorrected, 0u);
  EXPECT_EQ(d.ecc_mode, 1);  // simgpu's NVML answers nvmlDeviceGetEccMode since gpuscope doctor asks it
  EXPECT_FALSE(lists(d.unsupported, "nvmlDeviceGetEccMode"));
  EXPECT_FALSE(lists(d.unsupported, "nvmlDeviceGetUtilizationRates"));
}

TEST_F(GpuSourceTest, SamplesEveryMetricAtTheConfiguredRate) {
  const auto t = capture(simgpu_options(), 400);  // 100 Hz: ~40 samples
  ASSERT_GE(t.gpu_samples.size(), 10u);
  EXPECT_LE(t.gpu_samples.size(), 60u);
  for (size_t i = 0; i < t.gpu_samples.size(); ++i) {
    const fb::GpuSample& s = t.gpu_samples[i];
    EXPECT_EQ(s.device(), 0);
    EXPECT_EQ(s.valid() & kPlainMetrics, kPlainMetrics) << i;
    EXPECT_EQ(s.sm_clock_mhz(), 1980);
    EXPECT_EQ(s.memory_clock_mhz(), 3201);
    EXPECT_EQ(s.memory_used_bytes(), 542ull << 20);  // the node's reserved memory, no process
    // An idle simulated GPU: no kernel, idle power and temperature, and
    // NVML's "GPU idle" clock-event reason.
    EXPECT_EQ(s.gpu_util_pct(), 0);
    EXPECT_EQ(s.power_mw(), 90000u);
    EXPECT_EQ(s.temperature_c(), 32);
    EXPECT_EQ(s.throttle_reasons() & 1u, 1u);
    if (i > 0) {
      EXPECT_GE(s.start_ns() - t.gpu_samples[i - 1].start_ns(), 8'000'000u) << i;
    }
  }
  // GPM needs two snapshots: unknown (0xFF) in the first sample, then answered.
  EXPECT_EQ(t.gpu_samples[0].valid() & kGpmMetrics, 0u);
  EXPECT_EQ(t.gpu_samples[0].dram_bw_util_pct(), 0xFF);
  EXPECT_EQ(t.gpu_samples[0].sm_util_pct(), 0xFF);
  EXPECT_EQ(t.gpu_samples[1].valid() & kGpmMetrics, kGpmMetrics);
  EXPECT_EQ(t.gpu_samples[1].dram_bw_util_pct(), 0);
  EXPECT_EQ(t.gpu_samples[1].sm_util_pct(), 0);
}

// Real NVML blocks inside nvmlDeviceGetPcieThroughput for its measuring
// window; on an H200 a sampling round took ~40 ms and, done on the writer
// thread, let a launch-bound program's rings overflow. Here each such query
// blocks 150 ms: the writer must still flush every 20 ms meanwhile.
TEST_F(GpuSourceTest, SlowNvmlNeverHoldsUpTheWriter) {
  std::ofstream(dir_.file("slow-nvml.json")) << R"json({"name": "slow NVML (simulated)", "nvml": {"pcie_query_ms": 150}})json";
  setenv("SIMGPU_NODE", dir_.file("slow-nvml.json").c_str(), 1);
  const auto t = capture(simgpu_options(), 400, /*busy=*/true);
  unsetenv("SIMGPU_NODE");
  // Metadata, a frame per 20 ms flush of the records made meanwhile, and
  // the end; a writer stuck in the first sampling round (>= 300 ms) would
  // have written 3 or 4.
  EXPECT_GE(t.summary.stats.frames_read, 8u);
  ASSERT_TRUE(t.summary.probe.has_value());  // the end waited for the probe
  EXPECT_EQ(t.summary.probe->nvml_status, "ok");
  EXPECT_EQ(t.summary.devices.size(), 1u);
  EXPECT_GE(t.gpu_samples.size(), 1u);
}

TEST_F(GpuSourceTest, ZeroRateDescribesDevicesButNeverSamples) {
  GpuSourceOptions o = simgpu_options();
  o.nvml_hz = 0;
  const auto t = capture(o, 100);
  EXPECT_EQ(t.summary.devices.size(), 1u);
  EXPECT_TRUE(t.gpu_samples.empty());
}

TEST_F(GpuSourceTest, MissingNvmlIsRecordedNotFatal) {
  GpuSourceOptions o = simgpu_options();
  o.nvml_library = dir_.file("libnvidia-ml.so.1");
  const auto t = capture(o, 60);
  ASSERT_TRUE(t.summary.probe.has_value());
  EXPECT_NE(t.summary.probe->nvml_status.find("cannot open shared object file"), std::string::npos)
      << t.summary.probe->nvml_status;
  EXPECT_EQ(t.summary.probe->visible_devices, -1);
  EXPECT_TRUE(t.summary.devices.empty());
  EXPECT_TRUE(t.gpu_samples.empty());
  ASSERT_TRUE(t.summary.end.has_value());
}

TEST_F(GpuSourceTest, NvmlWithoutItsEntryPointsIsNamed) {
  GpuSourceOptions o = simgpu_options();
  o.nvml_library = simgpu_lib("libcudart.so.13");  // loads, but is not NVML
  const auto t = capture(o, 30);
  ASSERT_TRUE(t.summary.probe.has_value());
  EXPECT_NE(t.summary.probe->nvml_status.find("has no nvmlInit_v2"), std::string::npos)
      << t.summary.probe->nvml_status;
  EXPECT_TRUE(t.summary.devices.empty());
}

TEST_F(GpuSourceTest, DriverThatCannotLoadKeepsTheLoadersMessage) {
  GpuSourceOptions o = simgpu_options();
  o.driver_library = "libcuda_gpuscope_test_missing.so.1";
  const auto t = capture(o, 30);
  ASSERT_TRUE(t.summary.probe.has_value());
  EXPECT_FALSE(t.summary.probe->driver_loaded);
  EXPECT_EQ(t.summary.probe->driver_error,
            "libcuda_gpuscope_test_missing.so.1: cannot open shared object file: No such file or directory");
  EXPECT_EQ(t.summary.probe->driver_version, -1);
}

TEST_F(GpuSourceTest, TheToolkitsStubDriverIsToldApart) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub here";
  GpuSourceOptions o = simgpu_options();
  o.driver_library = stub;
  const auto t = capture(o, 30);
  ASSERT_TRUE(t.summary.probe.has_value());
  EXPECT_TRUE(t.summary.probe->driver_loaded);
  EXPECT_EQ(t.summary.probe->driver_version, -1);
  EXPECT_NE(t.summary.probe->driver_error.find("CUDA_ERROR_STUB_LIBRARY"), std::string::npos)
      << t.summary.probe->driver_error;
}

TEST_F(GpuSourceTest, DeviceNodesAreListedWithTheRequiredOnesEvenWhenMissing) {
  test::TempDir dev;
  for (const char* name : {"nvidiactl", "nvidia0", "nvidia1", "nvidia-modeset"}) std::ofstream(dev.file(name)) << "";
  chmod(dev.file("nvidia1").c_str(), 0);
  GpuSourceOptions o = simgpu_options();
  o.dev_dir = dev.path();
  const auto t = capture(o, 30);
  ASSERT_TRUE(t.summary.probe.has_value());
  std::vector<std::string> names;
  for (const auto& n : t.summary.probe->device_nodes) {
    names.push_back(n.path.substr(dev.path().size() + 1));
    EXPECT_EQ(n.exists, names.back() != "nvidia-uvm") << n.path;
    if (geteuid() == 0) {
      EXPECT_EQ(n.readable, n.exists) << n.path;  // root may open anything that exists
    } else {
      EXPECT_EQ(n.readable, n.exists && names.back() != "nvidia1") << n.path;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"nvidia-modeset", "nvidia-uvm", "nvidia0", "nvidia1", "nvidiactl"}));
}

TEST_F(GpuSourceTest, NoNodesAtAllStillNamesWhatCudaNeeds) {
  test::TempDir dev;
  GpuSourceOptions o = simgpu_options();
  o.dev_dir = dev.path();
  const auto t = capture(o, 30);
  ASSERT_TRUE(t.summary.probe.has_value());
  std::vector<std::string> names;
  for (const auto& n : t.summary.probe->device_nodes) {
    names.push_back(n.path.substr(dev.path().size() + 1));
    EXPECT_FALSE(n.exists || n.readable || n.writable) << n.path;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"nvidia-uvm", "nvidia0", "nvidiactl"}));
}

TEST_F(GpuSourceTest, NumaNodeAndLocalCpusComeFromSysfs) {
  test::TempDir sys;
  const std::string device = sys.file("0000:18:00.0");
  std::filesystem::create_directories(device);
  std::ofstream(device + "/numa_node") << "1\n";
  std::ofstream(device + "/local_cpulist") << "16-31,48-63\n";
  GpuSourceOptions o = simgpu_options();
  o.pci_devices_dir = sys.path();
  const auto t = capture(o, 30);
  ASSERT_EQ(t.summary.devices.size(), 1u);
  EXPECT_EQ(t.summary.devices[0].numa_node, 1);
  EXPECT_EQ(t.summary.devices[0].local_cpus, "16-31,48-63");
}

TEST_F(GpuSourceTest, NoSysfsEntryLeavesTopologyUnknown) {
  test::TempDir sys;
  GpuSourceOptions o = simgpu_options();
  o.pci_devices_dir = sys.path();
  const auto t = capture(o, 30);
  ASSERT_EQ(t.summary.devices.size(), 1u);
  EXPECT_EQ(t.summary.devices[0].numa_node, -1);
  EXPECT_EQ(t.summary.devices[0].local_cpus, "");
}

}  // namespace
}  // namespace gpuscope::gpu
