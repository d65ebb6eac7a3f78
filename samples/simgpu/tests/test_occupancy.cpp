// The occupancy calculator and kernel attributes, on tests/nodes/test.json:
// k_1ms takes the defaults (32 registers, no static shared memory), k_regs128
// 128 registers per thread, k_smem40k 40 KiB of static shared memory and at
// most 512 threads per block.  An H200 SM: 2048 threads, 64 Ki registers,
// 228 KiB of shared memory (1 KiB of it reserved per block), 32 blocks.
#include <cuda.h>

#include "test_support.hpp"

namespace {

using simgpu_test::kernel;

int active_blocks(const void* k, int block_size, size_t dynamic_shared = 0) {
  int blocks = -1;
  EXPECT_EQ(cudaSuccess, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, block_size, dynamic_shared));
  return blocks;
}

TEST(Occupancy, ThreadsRegistersAndSharedMemoryLimitResidentBlocks) {
  EXPECT_EQ(8, active_blocks(kernel("k_1ms"), 256));   // 64 warps per SM / 8
  EXPECT_EQ(2, active_blocks(kernel("k_1ms"), 1024));
  EXPECT_EQ(21, active_blocks(kernel("k_1ms"), 96));   // 3 warps per block
  EXPECT_EQ(32, active_blocks(kernel("k_1ms"), 32));   // the SM's block slots
  EXPECT_EQ(2, active_blocks(kernel("k_regs128"), 256));  // 4096 registers per warp
  EXPECT_EQ(0, active_blocks(kernel("k_regs128"), 1024));  // more registers than an SM has
  EXPECT_EQ(5, active_blocks(kernel("k_smem40k"), 256));  // 41 KiB per block
  EXPECT_EQ(4, active_blocks(kernel("k_smem40k"), 256, 8192));
  EXPECT_EQ(0, active_blocks(kernel("k_smem40k"), 256, 8193));  // over 48 KiB without opting in
  EXPECT_EQ(0, active_blocks(kernel("k_smem40k"), 1024));        // over its thread limit
  int blocks = 0;
  EXPECT_EQ(cudaErrorInvalidDeviceFunction,
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, &blocks, 256, 0));
  cudaGetLastError();
}

TEST(Occupancy, FunctionAttributesDescribeTheKernel) {
  cudaFuncAttributes attr{};
  CUDA_OK(cudaFuncGetAttributes(&attr, kernel("k_1ms")));
  EXPECT_EQ(32, attr.numRegs);
  EXPECT_EQ(1024, attr.maxThreadsPerBlock);
  EXPECT_EQ(0u, attr.sharedSizeBytes);
  EXPECT_EQ(49152, attr.maxDynamicSharedSizeBytes);
  EXPECT_EQ(90, attr.binaryVersion);
  CUDA_OK(cudaFuncGetAttributes(&attr, kernel("k_regs128")));
  EXPECT_EQ(128, attr.numRegs);
  EXPECT_EQ(512, attr.maxThreadsPerBlock);  // 64 Ki registers / 128
  CUDA_OK(cudaFuncGetAttributes(&attr, kernel("k_smem40k")));
  EXPECT_EQ(40960u, attr.sharedSizeBytes);
  EXPECT_EQ(8192, attr.maxDynamicSharedSizeBytes);
}

TEST(Occupancy, OptingIntoMoreSharedMemoryRaisesTheLimit) {
  const void* k = kernel("k_smem40k");
  EXPECT_EQ(cudaErrorInvalidConfiguration, cudaLaunchKernel(k, dim3(1), dim3(256), nullptr, 100000, nullptr));
  CUDA_OK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000));
  EXPECT_EQ(1, active_blocks(k, 256, 100000));
  CUDA_OK(cudaLaunchKernel(k, dim3(1), dim3(256), nullptr, 100000, nullptr));
  EXPECT_EQ(cudaErrorInvalidValue, cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 200000));
  CUDA_OK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 8192));
  EXPECT_EQ(cudaErrorLaunchOutOfResources,
            cudaLaunchKernel(kernel("k_regs128"), dim3(1), dim3(1024), nullptr, 0, nullptr));
  cudaGetLastError();
  CUDA_OK(cudaDeviceSynchronize());
}

TEST(Occupancy, PotentialBlockSizeFillsTheSm) {
  int min_grid = 0, block = 0;
  CUDA_OK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, kernel("k_1ms")));
  EXPECT_EQ(1024, block);
  EXPECT_EQ(2 * 132, min_grid);
  CUDA_OK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, kernel("k_regs128")));
  EXPECT_EQ(512, block);  // one 512-thread block holds every register
  EXPECT_EQ(132, min_grid);
}

TEST(Occupancy, AvailableDynamicSharedMemory) {
  size_t bytes = 0;
  CUDA_OK(cudaOccupancyAvailableDynamicSMemPerBlock(&bytes, kernel("k_1ms"), 8, 256));
  EXPECT_EQ(233472u / 8 - 1024, bytes);
  CUDA_OK(cudaOccupancyAvailableDynamicSMemPerBlock(&bytes, kernel("k_1ms"), 2, 256));
  EXPECT_EQ(49152u, bytes);  // the kernel's own limit without opting in
  CUDA_OK(cudaOccupancyAvailableDynamicSMemPerBlock(&bytes, kernel("k_smem40k"), 5, 256));
  EXPECT_EQ(233472u / 5 / 128 * 128 - 1024 - 40960, bytes);
  CUDA_OK(cudaOccupancyAvailableDynamicSMemPerBlock(&bytes, kernel("k_smem40k"), 6, 256));
  EXPECT_EQ(0u, bytes);
}

TEST(Occupancy, CooperativeGridsMustFitOnTheDevice) {
  // 256-thread blocks of k_1ms: 8 per SM, 132 SMs.
  const void* k = kernel("k_1ms");
  CUDA_OK(cudaLaunchCooperativeKernel(k, dim3(8 * 132), dim3(256), nullptr, 0, nullptr));
  EXPECT_EQ(cudaErrorCooperativeLaunchTooLarge,
            cudaLaunchCooperativeKernel(k, dim3(8 * 132 + 1), dim3(256), nullptr, 0, nullptr));
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(8 * 132 + 1);
  config.blockDim = dim3(256);
  config.attrs = &attr;
  config.numAttrs = 1;
  EXPECT_EQ(cudaErrorCooperativeLaunchTooLarge, cudaLaunchKernelExC(&config, k, nullptr));
  attr.val.cooperative = 0;
  CUDA_OK(cudaLaunchKernelExC(&config, k, nullptr));  // an ordinary grid may be any size
  cudaGetLastError();
  CUDA_OK(cudaDeviceSynchronize());
}

TEST(Occupancy, DriverApiAgrees) {
  CUfunction f = nullptr;
  CUDA_OK(cudaGetFuncBySymbol(&f, kernel("k_regs128")));
  int blocks = 0, regs = 0, min_grid = 0, block = 0;
  ASSERT_EQ(CUDA_SUCCESS, cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 0));
  EXPECT_EQ(2, blocks);
  ASSERT_EQ(CUDA_SUCCESS, cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  EXPECT_EQ(128, regs);
  // Dynamic shared memory by block size: 64 bytes per thread.
  auto per_thread = [](int block_size) -> size_t { return size_t(block_size) * 64; };
  ASSERT_EQ(CUDA_SUCCESS, cuOccupancyMaxPotentialBlockSize(&min_grid, &block, f, per_thread, 0, 0));
  EXPECT_EQ(512, block);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 16));
}

}  // namespace
