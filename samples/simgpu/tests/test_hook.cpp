// Run with dlsym_hook.cpp's library LD_PRELOADed: the runtime must find the
// driver with a plain dlsym of cuGetProcAddress_v2, then ask the pointer it
// gets back for "cuGetProcAddress" and use *that* for every function, once
// with default flags and once for per-thread default stream variants, and
// finally call the driver through the pointers it was given.
#include <dlfcn.h>

#include <cuda.h>

#include "test_support.hpp"

namespace {

TEST(DriverHooks, RuntimeReachesTheDriverThroughCuGetProcAddress) {
  auto lookups = reinterpret_cast<int (*)(const char*, unsigned long long)>(dlsym(RTLD_DEFAULT, "simgpu_hook_lookups"));
  auto allocs = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "simgpu_hook_alloc_calls"));
  ASSERT_TRUE(lookups && allocs) << "run with LD_PRELOAD=libsimgpu_test_dlsym_hook.so (ctest does)";
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 256));
  EXPECT_EQ(1, lookups("cuGetProcAddress", CU_GET_PROC_ADDRESS_DEFAULT));
  for (const char* fn : {"cuInit", "cuMemAlloc", "cuMemcpyHtoD", "cuLaunchKernel", "cuCtxSynchronize"}) {
    EXPECT_EQ(1, lookups(fn, CU_GET_PROC_ADDRESS_DEFAULT)) << fn;
    EXPECT_EQ(1, lookups(fn, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) << fn;
  }
  EXPECT_EQ(1, allocs());
  CUDA_OK(cudaMalloc(&p, 256));
  EXPECT_EQ(2, allocs());
}

}  // namespace
