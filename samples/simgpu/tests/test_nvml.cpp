// NVML answers derived from the model, on tests/nodes/test.json (k_mem_10ms:
// a memory-class kernel that streams DRAM at full bandwidth for 10 ms).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "../src/nvml/nvml_types.hpp"
#include "child_process.hpp"
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
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned int*,
                                             unsigned long long);
nvmlReturn_t nvmlSystemGetProcessName(unsigned int, char*, unsigned int);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t*);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t, nvmlGpmSample_t);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t*);
const char* nvmlErrorString(nvmlReturn_t);
}

namespace {

using simgpu_test::kernel;
using simgpu_test::launch;
using simgpu_test::ChildRun;
using simgpu_test::run_child_while;

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

// One nvmlDeviceGetProcessUtilization answer, asked the two-call way.
struct ProcessSamples {
  nvmlReturn_t rc;
  std::vector<nvmlProcessUtilizationSample_t> samples;

  const nvmlProcessUtilizationSample_t* of(int pid) const {
    for (const auto& s : samples)
      if (s.pid == static_cast<unsigned>(pid)) return &s;
    return nullptr;
  }
};

ProcessSamples process_samples(nvmlDevice_t dev, unsigned long long last_seen) {
  unsigned count = 0;
  nvmlReturn_t rc = nvmlDeviceGetProcessUtilization(dev, nullptr, &count, last_seen);
  if (rc != NVML_ERROR_INSUFFICIENT_SIZE) return {rc, {}};
  std::vector<nvmlProcessUtilizationSample_t> samples(count + 4);  // room for one turning busy meanwhile
  count = static_cast<unsigned>(samples.size());
  rc = nvmlDeviceGetProcessUtilization(dev, samples.data(), &count, last_seen);
  samples.resize(rc == NVML_SUCCESS ? count : 0);
  return {rc, samples};
}

long long realtime_us() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// Per-process samples: the first answer covers the time since the process
// attached; one that names that answer's timestamp covers only what ran after.
TEST_F(Nvml, ProcessUtilizationCoversTheWindowSinceLastSeen) {
  const void* k = kernel("k_10ms");
  ASSERT_EQ(cudaSuccess, launch(k));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  unsigned count = 0;
  EXPECT_EQ(NVML_ERROR_INVALID_ARGUMENT, nvmlDeviceGetProcessUtilization(dev_, nullptr, nullptr, 0));
  ASSERT_EQ(NVML_ERROR_INSUFFICIENT_SIZE, nvmlDeviceGetProcessUtilization(dev_, nullptr, &count, 0));
  EXPECT_GE(count, 1u);
  nvmlProcessUtilizationSample_t one;
  count = 0;
  EXPECT_EQ(NVML_ERROR_INSUFFICIENT_SIZE, nvmlDeviceGetProcessUtilization(dev_, &one, &count, 0));
  EXPECT_GE(count, 1u);

  const double before_first = simgpu_test::now_ms();
  const ProcessSamples first = process_samples(dev_, 0);
  ASSERT_EQ(NVML_SUCCESS, first.rc);
  const nvmlProcessUtilizationSample_t* mine = first.of(getpid());
  ASSERT_NE(nullptr, mine);
  EXPECT_NEAR(static_cast<double>(realtime_us()), static_cast<double>(mine->timeStamp), 5e6);
  EXPECT_EQ(0u, mine->encUtil);
  EXPECT_EQ(0u, mine->decUtil);

  // 300 ms of kernels, all queued after the first answer and done before the next.
  for (int i = 0; i < 30; ++i) ASSERT_EQ(cudaSuccess, launch(k));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  const ProcessSamples second = process_samples(dev_, mine->timeStamp);
  const double window_ms = simgpu_test::now_ms() - before_first;  // at least the sample's window
  ASSERT_EQ(NVML_SUCCESS, second.rc);
  const nvmlProcessUtilizationSample_t* now = second.of(getpid());
  ASSERT_NE(nullptr, now);
  EXPECT_GT(now->timeStamp, mine->timeStamp);
  EXPECT_GE(now->smUtil + 1.0, 100.0 * 300.0 / window_ms) << "window " << window_ms << " ms";
  EXPECT_GT(now->smUtil, 0u);
  EXPECT_LE(now->smUtil, 100u);
  EXPECT_EQ(0u, now->memUtil);  // no copies in this window

  // Idle since then: this process has no sample newer than the second.
  sleep_ms(50);
  const ProcessSamples idle = process_samples(dev_, now->timeStamp);
  EXPECT_TRUE(idle.rc == NVML_ERROR_NOT_FOUND || idle.rc == NVML_SUCCESS) << idle.rc;
  EXPECT_EQ(nullptr, idle.of(getpid()));
}

// Another process's kernels are its own sample, under its pid: the driver
// charges work to the process that queued it, in the node's shared log.
TEST_F(Nvml, ProcessUtilizationListsAnotherProcessUnderItsPid) {
  if (access("/dev/shm", W_OK) != 0) GTEST_SKIP() << "no /dev/shm: NVML sees this process only";
  const void* k = kernel("k_10ms");  // registered before the fork, as a child of a CUDA program finds it
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  ProcessSamples got{};
  const ChildRun child = run_child_while(
      [&] {
        bool ok = true;
        for (int i = 0; i < 10 && ok; ++i) ok = launch(k) == cudaSuccess;
        return ok && cudaDeviceSynchronize() == cudaSuccess;
      },
      [&](pid_t) { got = process_samples(dev_, 0); });
  ASSERT_GT(child.pid, 0) << "fork failed";
  ASSERT_TRUE(child.ok) << "the child's kernels failed";
  EXPECT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0);
  ASSERT_EQ(NVML_SUCCESS, got.rc);
  const nvmlProcessUtilizationSample_t* theirs = got.of(child.pid);
  ASSERT_NE(nullptr, theirs) << "no sample for the child " << child.pid;
  EXPECT_GT(theirs->smUtil, 0u);
  EXPECT_EQ(0u, theirs->memUtil);
}

TEST_F(Nvml, ProcessNameIsTheCommOfThePid) {
  char want[64] = {};
  FILE* f = std::fopen("/proc/self/comm", "r");
  ASSERT_NE(nullptr, f);
  ASSERT_NE(nullptr, std::fgets(want, sizeof want, f));
  std::fclose(f);
  want[std::strcspn(want, "\n")] = '\0';
  char name[64];
  NVML_OK(nvmlSystemGetProcessName(static_cast<unsigned>(getpid()), name, sizeof name));
  EXPECT_STREQ(want, name);
  char small[4];
  NVML_OK(nvmlSystemGetProcessName(static_cast<unsigned>(getpid()), small, sizeof small));
  EXPECT_EQ(std::string(want).substr(0, 3), small);
  EXPECT_EQ(NVML_ERROR_INVALID_ARGUMENT, nvmlSystemGetProcessName(static_cast<unsigned>(getpid()), nullptr, 64));
  EXPECT_EQ(NVML_ERROR_INVALID_ARGUMENT, nvmlSystemGetProcessName(static_cast<unsigned>(getpid()), name, 0));
  EXPECT_EQ(NVML_ERROR_NOT_FOUND, nvmlSystemGetProcessName(0, name, sizeof name));  // no /proc/0
}

}  // namespace
