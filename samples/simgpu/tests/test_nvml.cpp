// NVML answers derived from the model, on tests/nodes/test.json (k_mem_10ms:
// a memory-class kernel that streams DRAM at full bandwidth for 10 ms).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "../src/nvml/nvml_types.hpp"
#include "test_support.hpp"

extern "C" {
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int*);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t*);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t, char*, unsigned int);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t, nvmlPciInfo_t*);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t, unsigned int*);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t, unsigned int*);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t, nvmlUtilization_t*);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*);
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t, nvmlPcieUtilCounter_t, unsigned int*);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t, unsigned long long*);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int*);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t, int, nvmlFieldValue_t*);
nvmlReturn_t nvmlSystemGetDriverVersion(char*, unsigned int);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t*);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t, nvmlGpmSample_t);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t*);
const char* nvmlErrorString(nvmlReturn_t);
}

namespace {

using simgpu_test::kernel;
using simgpu_test::launch;

#define NVML_OK(expr) ASSERT_EQ(NVML_SUCCESS, (expr)) << #expr

class Nvml : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(NVML_SUCCESS, nvmlInit_v2());
    ASSERT_EQ(NVML_SUCCESS, nvmlDeviceGetHandleByIndex_v2(0, &dev_));
  }
  void TearDown() override { nvmlShutdown(); }
  static void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
  nvmlDevice_t dev_ = nullptr;
};

TEST_F(Nvml, StaticFactsComeFromTheNode) {
  unsigned count = 0, value = 0;
  NVML_OK(nvmlDeviceGetCount_v2(&count));
  EXPECT_EQ(1u, count);
  char name[96];
  NVML_OK(nvmlDeviceGetName(dev_, name, sizeof name));
  EXPECT_NE(nullptr, std::strstr(name, "(simulated)"));
  nvmlPciInfo_t pci;
  NVML_OK(nvmlDeviceGetPciInfo_v3(dev_, &pci));
  EXPECT_STREQ("00000000:18:00.0", pci.busId);
  NVML_OK(nvmlDeviceGetCurrPcieLinkGeneration(dev_, &value));
  EXPECT_EQ(5u, value);
  NVML_OK(nvmlDeviceGetMaxPcieLinkWidth(dev_, &value));
  EXPECT_EQ(16u, value);
  char driver[80];
  NVML_OK(nvmlSystemGetDriverVersion(driver, sizeof driver));
  EXPECT_STREQ("580.82.07", driver);
  EXPECT_EQ(NVML_ERROR_INVALID_ARGUMENT, nvmlDeviceGetHandleByIndex_v2(1, &dev_));
  EXPECT_STREQ("Not Supported", nvmlErrorString(NVML_ERROR_NOT_SUPPORTED));
}

TEST_F(Nvml, UtilizationFollowsTheKernelsTheModelRuns) {
  nvmlUtilization_t util;
  NVML_OK(nvmlDeviceGetUtilizationRates(dev_, &util));
  EXPECT_EQ(0u, util.gpu);
  unsigned long long reasons = 0;
  NVML_OK(nvmlDeviceGetCurrentClocksEventReasons(dev_, &reasons));
  EXPECT_TRUE(reasons & nvmlClocksEventReasonGpuIdle);
  unsigned idle_mw = 0, busy_mw = 0;
  NVML_OK(nvmlDeviceGetPowerUsage(dev_, &idle_mw));
  // 600 ms of back-to-back DRAM-bound kernels; sample 200 ms into them.
  for (int i = 0; i < 60; ++i) ASSERT_EQ(cudaSuccess, launch(kernel("k_mem_10ms"), nullptr, 1000, 1));
  nvmlGpmSample_t a, b;
  NVML_OK(nvmlGpmSampleAlloc(&a));
  NVML_OK(nvmlGpmSampleAlloc(&b));
  sleep_ms(100);
  NVML_OK(nvmlGpmSampleGet(dev_, a));
  sleep_ms(100);
  NVML_OK(nvmlGpmSampleGet(dev_, b));
  NVML_OK(nvmlDeviceGetUtilizationRates(dev_, &util));
  NVML_OK(nvmlDeviceGetPowerUsage(dev_, &busy_mw));
  EXPECT_GE(util.gpu, 90u);
  EXPECT_GE(util.memory, 90u);
  EXPECT_GT(busy_mw, idle_mw);
  nvmlGpmMetricsGet_t metrics{};
  metrics.version = NVML_GPM_METRICS_GET_VERSION;
  metrics.numMetrics = 3;
  metrics.sample1 = a;
  metrics.sample2 = b;
  metrics.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
  metrics.metrics[1].metricId = NVML_GPM_METRIC_DRAM_BW_UTIL;
  metrics.metrics[2].metricId = NVML_GPM_METRIC_SM_OCCUPANCY;
  NVML_OK(nvmlGpmMetricsGet(&metrics));
  EXPECT_EQ(NVML_SUCCESS, metrics.metrics[0].nvmlReturn);
  EXPECT_GE(metrics.metrics[0].value, 90.0);
  EXPECT_GE(metrics.metrics[1].value, 90.0);
  EXPECT_EQ(NVML_ERROR_NOT_SUPPORTED, metrics.metrics[2].nvmlReturn);
  nvmlGpmSampleFree(a);
  nvmlGpmSampleFree(b);
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  sleep_ms(200);  // longer than the 167 ms utilization window
  NVML_OK(nvmlDeviceGetUtilizationRates(dev_, &util));
  EXPECT_EQ(0u, util.gpu);
}

// More operations queued than NVML's activity log holds at once: the
// intervals around "now" are still there to be counted.
TEST_F(Nvml, UtilizationIsRightWithADeepQueue) {
  std::thread launcher([] {
    for (int i = 0; i < 5000; ++i) ASSERT_EQ(cudaSuccess, launch(kernel("k_100us")));
  });
  sleep_ms(200);
  nvmlUtilization_t util;
  NVML_OK(nvmlDeviceGetUtilizationRates(dev_, &util));
  EXPECT_GE(util.gpu, 90u);
  launcher.join();
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
}

TEST_F(Nvml, PcieCountersFollowCopies) {
  constexpr size_t kBytes = 10u << 20;  // 105 ms at the test node's 0.1 GB/s
  void *dev = nullptr, *pinned = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&dev, kBytes));
  ASSERT_EQ(cudaSuccess, cudaMallocHost(&pinned, kBytes));
  ASSERT_EQ(cudaSuccess, cudaMemset(dev, 0, kBytes));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(dev, pinned, kBytes, cudaMemcpyHostToDevice, nullptr));
  sleep_ms(25);
  unsigned rx = 0, tx = 0;
  NVML_OK(nvmlDeviceGetPcieThroughput(dev_, NVML_PCIE_UTIL_RX_BYTES, &rx));
  NVML_OK(nvmlDeviceGetPcieThroughput(dev_, NVML_PCIE_UTIL_TX_BYTES, &tx));
  EXPECT_GT(rx, 50000u);  // KB/s: about 97000 while the copy runs
  EXPECT_EQ(0u, tx);
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  nvmlFieldValue_t fields[2] = {};
  fields[0].fieldId = NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
  fields[1].fieldId = 1;  // not modeled
  NVML_OK(nvmlDeviceGetFieldValues(dev_, 2, fields));
  EXPECT_EQ(NVML_SUCCESS, fields[0].nvmlReturn);
  EXPECT_GE(fields[0].value.ullVal, kBytes);
  EXPECT_EQ(NVML_ERROR_NOT_SUPPORTED, fields[1].nvmlReturn);
  cudaFreeHost(pinned);
  cudaFree(dev);
}

TEST_F(Nvml, MemoryAndProcessesFollowAllocations) {
  nvmlMemory_t before, during;
  NVML_OK(nvmlDeviceGetMemoryInfo(dev_, &before));
  void* p = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&p, 1ull << 30));
  NVML_OK(nvmlDeviceGetMemoryInfo(dev_, &during));
  EXPECT_EQ(before.used + (1ull << 30), during.used);
  EXPECT_EQ(during.total, during.used + during.free);
  nvmlProcessInfo_t procs[8];
  unsigned count = 8;
  NVML_OK(nvmlDeviceGetComputeRunningProcesses_v3(dev_, &count, procs));
  ASSERT_EQ(1u, count);
  EXPECT_EQ(static_cast<unsigned>(getpid()), procs[0].pid);
  EXPECT_EQ(1ull << 30, procs[0].usedGpuMemory);
  ASSERT_EQ(cudaSuccess, cudaFree(p));
  NVML_OK(nvmlDeviceGetMemoryInfo(dev_, &during));
  EXPECT_EQ(before.used, during.used);
}

// NVML answers for the whole GPU: another process (simgpu-smi) sees this
// process's kernels through the shared activity log.
TEST_F(Nvml, AnotherProcessSeesTheSameDevice) {
  const char* smi = std::getenv("SIMGPU_SMI");
  if (!smi) GTEST_SKIP() << "SIMGPU_SMI not set";
  for (int i = 0; i < 60; ++i) ASSERT_EQ(cudaSuccess, launch(kernel("k_10ms")));
  sleep_ms(200);
  FILE* out = popen((std::string(smi) + " --query utilization.gpu").c_str(), "r");
  ASSERT_NE(nullptr, out);
  char line[64] = {};
  ASSERT_NE(nullptr, fgets(line, sizeof line, out));
  pclose(out);
  EXPECT_GE(std::atoi(line), 90) << line;
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
}

}  // namespace
