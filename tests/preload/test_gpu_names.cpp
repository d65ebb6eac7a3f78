// The small pure parts of the GPU evidence: which libraries count as the
// GPU stack, and NVML bus ids in sysfs form.
#include <gtest/gtest.h>

#include "gpu/device_info.h"
#include "gpu/gpu_libraries.h"

namespace gpuscope::gpu {
namespace {

TEST(GpuLibraries, TheCudaStackByFileName) {
  for (const char* name :
       {"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so", "libcudart.so.13", "libcudart.so",
        "libcublas.so.13", "libcublasLt.so.13", "/opt/x/libcudnn.so.9", "libcudnn_ops.so.9", "libnvrtc.so.13",
        "libnvrtc-builtins.so.13.0", "libnvidia-ml.so.1", "libnccl.so.2", "libnccl-net.so", "libcufft.so.12",
        "libcusparse.so.12", "libcurand.so.10", "libcusolver.so.12", "libnvJitLink.so.13", "libcupti.so.13",
        "libnvToolsExt.so.1"})
    EXPECT_TRUE(is_gpu_library(name)) << name;
}

TEST(GpuLibraries, NotEverythingThatStartsLikeIt) {
  for (const char* name : {"libc.so.6", "libcudadebugger.so.1", "/usr/lib/libcuda/other.so", "libm.so.6",
                           "cudnn.so", "", "libnvidia-glcore.so.580"})
    EXPECT_FALSE(is_gpu_library(name)) << name;
  EXPECT_FALSE(is_gpu_library(nullptr));
}

TEST(SysfsAddress, NvmlBusIdsBecomeSysfsDeviceNames) {
  EXPECT_EQ(sysfs_pci_address("00000000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(sysfs_pci_address("00000001:AB:1F.3"), "0001:ab:1f.3");
  EXPECT_EQ(sysfs_pci_address("0000:3A:00.0"), "0000:3a:00.0");
}

TEST(SysfsAddress, MalformedIdsGiveNothing) {
  for (const char* id : {"", "garbage", "00000000:18:00", "0000000000:18:00.0", "zz:18:00.0", ":18:00.0"})
    EXPECT_EQ(sysfs_pci_address(id), "") << id;
}

TEST(UnsupportedNames, AbsentEntryPointsAreMarked) {
  EXPECT_EQ(unsupported_name("nvmlDeviceGetEccMode", nvml::kNotSupported), "nvmlDeviceGetEccMode");
  EXPECT_EQ(unsupported_name("nvmlDeviceGetEccMode", nvml::kFunctionNotFound), "nvmlDeviceGetEccMode (absent)");
}

}  // namespace
}  // namespace gpuscope::gpu
