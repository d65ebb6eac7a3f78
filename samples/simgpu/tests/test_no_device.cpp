// Run with SIMGPU_NODE=nodes/no-device.json: a driver that sees no GPU.  The
// runtime answers cudaErrorNoDevice as on such a machine (not 35, which means
// no driver at all), and NVML initializes with zero devices.
#include "../src/nvml/nvml_types.hpp"
#include "test_support.hpp"

extern "C" nvmlReturn_t nvmlInit_v2(void);
extern "C" nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int*);
extern "C" nvmlReturn_t nvmlShutdown(void);

namespace {

TEST(NoDevice, RuntimeReportsNoDevice) {
  int count = -1;
  EXPECT_EQ(cudaErrorNoDevice, cudaGetDeviceCount(&count));
  EXPECT_EQ(0, count);
  void* p = nullptr;
  EXPECT_EQ(cudaErrorNoDevice, cudaMalloc(&p, 16));
  EXPECT_EQ(cudaErrorNoDevice, cudaGetLastError());
  EXPECT_STREQ("no CUDA-capable device is detected", cudaGetErrorString(cudaErrorNoDevice));
  int version = 0;
  EXPECT_EQ(cudaSuccess, cudaDriverGetVersion(&version));  // the driver itself is there
  EXPECT_EQ(13000, version);
}

TEST(NoDevice, NvmlSeesNoDevices) {
  ASSERT_EQ(NVML_SUCCESS, nvmlInit_v2());
  unsigned count = 99;
  EXPECT_EQ(NVML_SUCCESS, nvmlDeviceGetCount_v2(&count));
  EXPECT_EQ(0u, count);
  nvmlShutdown();
}

}  // namespace
