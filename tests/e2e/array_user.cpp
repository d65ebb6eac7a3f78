// A program making the calls of CUDA arrays, mipmapped arrays, batched 3D
// copies and flagged event records, each once, printing each call's result:
// the calls older texture samples, video decoders and newer copy code make.
// Every copy moves 64 x 64 floats (16 KiB); array_driver_user.cpp makes the
// driver API's calls. Traced, each must be in the trace
// once with the result the runtime gave (the real runtime without a driver
// answers 35), each copy with its bytes and direction, each array with its
// size, and the output must not change.
#include <cuda_runtime_api.h>

#include <cstdio>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the 1D array copies

int main() {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  static float host[64 * 64];
  cudaArray_t a = nullptr, b = nullptr, volume = nullptr;
  cudaMipmappedArray_t levels = nullptr;
  cudaEvent_t event = nullptr;
  std::printf("cudaFree %d\n", cudaFree(nullptr));  // the usual way to create the context: frees nothing
  std::printf("cudaEventCreate %d\n", cudaEventCreate(&event));
  std::printf("cudaEventRecordWithFlags %d\n", cudaEventRecordWithFlags(event, nullptr, 0));
  std::printf("cudaEventSynchronize %d\n", cudaEventSynchronize(event));
  std::printf("cudaMallocArray %d\n", cudaMallocArray(&a, &desc, 64, 64));
  std::printf("cudaMallocArray %d\n", cudaMallocArray(&b, &desc, 64, 64));
  std::printf("cudaMalloc3DArray %d\n", cudaMalloc3DArray(&volume, &desc, cudaExtent{16, 16, 4}));
  std::printf("cudaMallocMipmappedArray %d\n", cudaMallocMipmappedArray(&levels, &desc, cudaExtent{64, 64, 0}, 4));
  std::printf("cudaMemcpyToArray %d\n", cudaMemcpyToArray(a, 0, 0, host, sizeof host, cudaMemcpyHostToDevice));
  std::printf("cudaMemcpyArrayToArray %d\n", cudaMemcpyArrayToArray(b, 0, 0, a, 0, 0, sizeof host));
  std::printf("cudaMemcpyFromArray %d\n", cudaMemcpyFromArray(host, b, 0, 0, sizeof host, cudaMemcpyDeviceToHost));
  std::printf("cudaMemcpyToArrayAsync %d\n",
              cudaMemcpyToArrayAsync(a, 0, 0, host, sizeof host, cudaMemcpyHostToDevice, nullptr));
  std::printf("cudaMemcpyFromArrayAsync %d\n",
              cudaMemcpyFromArrayAsync(host, a, 0, 0, sizeof host, cudaMemcpyDeviceToHost, nullptr));
  cudaMemcpy3DBatchOp op{};
  op.src.type = cudaMemcpyOperandTypePointer;
  op.src.op.ptr.ptr = host;
  op.dst.type = cudaMemcpyOperandTypeArray;
  op.dst.op.array.array = volume;
  op.extent = cudaExtent{16 * sizeof(float), 16, 4};
  std::printf("cudaMemcpy3DBatchAsync %d\n", cudaMemcpy3DBatchAsync(1, &op, 0, nullptr));
  std::printf("cudaFreeMipmappedArray %d\n", cudaFreeMipmappedArray(levels));
  std::printf("cudaFreeArray %d\n", cudaFreeArray(volume));
  std::printf("cudaFreeArray %d\n", cudaFreeArray(b));
  std::printf("cudaFreeArray %d\n", cudaFreeArray(a));
  return 0;
}
