// device_query: what the CUDA runtime reports about each device, in the
// format system administrators paste into tickets; with two or more
// devices, whether each pair can access the other's memory.
#include "conformance.h"

int main() {
  sample::name() = "device_query";
  std::printf("device_query: CUDA device query (runtime API, CUDART static or shared)\n\n");
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    std::printf("cudaGetDeviceCount returned %d\n-> %s\nResult = FAIL\n", static_cast<int>(error), cudaGetErrorString(error));
    std::fflush(stdout);
    return EXIT_FAILURE;
  }
  if (count == 0)
    std::printf("There are no available device(s) that support CUDA\n");
  else
    std::printf("Detected %d CUDA Capable device(s)\n", count);

  int driver = 0, runtime = 0;
  for (int dev = 0; dev < count; ++dev) {
    checkCudaErrors(cudaSetDevice(dev));
    cudaDeviceProp p;
    checkCudaErrors(cudaGetDeviceProperties(&p, dev));
    std::printf("\nDevice %d: \"%s\"\n", dev, p.name);
    checkCudaErrors(cudaDriverGetVersion(&driver));
    checkCudaErrors(cudaRuntimeGetVersion(&runtime));
    std::printf("  CUDA Driver Version / Runtime Version          %d.%d / %d.%d\n", driver / 1000, (driver % 100) / 10,
                runtime / 1000, (runtime % 100) / 10);
    std::printf("  CUDA Capability Major/Minor version number:    %d.%d\n", p.major, p.minor);
    std::printf("  Total amount of global memory:                 %.0f MBytes (%zu bytes)\n",
                static_cast<double>(p.totalGlobalMem) / 1048576.0, p.totalGlobalMem);
    std::printf("  Multiprocessors:                               %d\n", p.multiProcessorCount);
    int clock_khz = 0, memory_khz = 0;
    checkCudaErrors(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
    checkCudaErrors(cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, dev));
    std::printf("  GPU Max Clock rate:                            %.0f MHz\n", clock_khz * 1e-3);
    std::printf("  Memory Clock rate:                             %.0f MHz\n", memory_khz * 1e-3);
    std::printf("  Memory Bus Width:                              %d-bit\n", p.memoryBusWidth);
    std::printf("  L2 Cache Size:                                 %d bytes\n", p.l2CacheSize);
    std::printf("  Total shared memory per block:                 %zu bytes\n", p.sharedMemPerBlock);
    std::printf("  Total number of registers available per block: %d\n", p.regsPerBlock);
    std::printf("  Warp size:                                     %d\n", p.warpSize);
    std::printf("  Maximum number of threads per multiprocessor:  %d\n", p.maxThreadsPerMultiProcessor);
    std::printf("  Maximum number of threads per block:           %d\n", p.maxThreadsPerBlock);
    std::printf("  Max dimension size of a thread block (x,y,z): (%d, %d, %d)\n", p.maxThreadsDim[0], p.maxThreadsDim[1],
                p.maxThreadsDim[2]);
    std::printf("  Max dimension size of a grid size    (x,y,z): (%d, %d, %d)\n", p.maxGridSize[0], p.maxGridSize[1],
                p.maxGridSize[2]);
    std::printf("  Concurrent copy and kernel execution:          %s with %d copy engine(s)\n",
                p.asyncEngineCount ? "Yes" : "No", p.asyncEngineCount);
    std::printf("  Device supports Unified Addressing (UVA):      %s\n", p.unifiedAddressing ? "Yes" : "No");
    std::printf("  Device supports Managed Memory:                %s\n", p.managedMemory ? "Yes" : "No");
    std::printf("  Device supports Host Memory Mapping:           %s\n", p.canMapHostMemory ? "Yes" : "No");
    std::printf("  Device PCI Domain ID / Bus ID / location ID:   %d / %d / %d\n", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  }

  if (count >= 2) {
    std::printf("\n");
    for (int i = 0; i < count; ++i)
      for (int j = 0; j < count; ++j) {
        if (i == j) continue;
        int can = 0;
        checkCudaErrors(cudaDeviceCanAccessPeer(&can, i, j));
        std::printf("> Peer access from GPU%d to GPU%d : %s\n", i, j, can ? "Yes" : "No");
      }
  }
  std::printf("\ndevice_query, CUDA Driver = CUDART, CUDA Driver Version = %d.%d, CUDA Runtime Version = %d.%d, NumDevs = %d\n",
              driver / 1000, (driver % 100) / 10, runtime / 1000, (runtime % 100) / 10, count);
  std::printf("Result = PASS\n");
  return EXIT_SUCCESS;
}
