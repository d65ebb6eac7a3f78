// A program making the calls of CUDA arrays, mipmapped arrays, batched
// copies and flagged event records, each once, printing each call's result:
// the calls older texture samples, video decoders and newer copy code make.
// Every copy moves 64 x 64 floats (16 KiB) but the batched 3D copy into the
// volume (16 x 16 x 4 floats, its extent in elements). A real driver's array
// handles point into the program's heap, beside its own buffers: a pageable
// buffer a few MiB past a 16 MiB array's handle goes up in a batch and
// comes back by cudaMemcpyDefault, and must stay pageable host memory.
// array_driver_user.cpp makes the driver API's calls. Traced, each must be in the trace
// once with the result the runtime gave (the real runtime without a driver
// answers 35), each copy with its bytes and direction, each array with its
// size, and the output must not change.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <sys/mman.h>

#include <cstdint>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the 1D array copies

// Pageable memory 1 to 15 MiB past `handle`: the first free stretch there.
float* beside(const void* handle, size_t bytes) {
  constexpr uintptr_t kPage = 4096, kMiB = 1 << 20;
  const uintptr_t at = (reinterpret_cast<uintptr_t>(handle) + kPage - 1) & ~(kPage - 1);
  for (uintptr_t offset = kMiB; offset < 15 * kMiB; offset += kMiB) {
    void* p = mmap(reinterpret_cast<void*>(at + offset), bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED) return static_cast<float*>(p);
  }
  return static_cast<float*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
}

int main() {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  static float host[64 * 64];
  cudaArray_t a = nullptr, b = nullptr, volume = nullptr, big = nullptr;
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
  cudaStream_t stream = nullptr;
  std::printf("cudaStreamCreate %d\n", cudaStreamCreate(&stream));  // batches refuse the legacy stream
  cudaMemcpy3DBatchOp op{};
  op.src.type = cudaMemcpyOperandTypePointer;
  op.src.op.ptr.ptr = host;
  op.dst.type = cudaMemcpyOperandTypeArray;
  op.dst.op.array.array = volume;
  op.extent = cudaExtent{16, 16, 4};
  op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  std::printf("cudaMemcpy3DBatchAsync %d\n", cudaMemcpy3DBatchAsync(1, &op, 0, stream));
  std::printf("cudaMalloc3DArray %d\n", cudaMalloc3DArray(&big, &desc, cudaExtent{256, 256, 64}));
  float* staging = beside(big, sizeof host);
  float* device = nullptr;
  std::printf("cudaMalloc %d\n", cudaMalloc(reinterpret_cast<void**>(&device), sizeof host));
  constexpr size_t kHalf = 32 * 64;
  void* dsts[] = {device, device + kHalf};
  const void* srcs[] = {staging, staging + kHalf};
  size_t sizes[] = {kHalf * sizeof(float), kHalf * sizeof(float)};
  cudaMemcpyAttributes in_order{};
  in_order.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t first = 0;
  std::printf("cudaMemcpyBatchAsync %d\n", cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &in_order, &first, 1, stream));
  std::printf("cudaStreamSynchronize %d\n", cudaStreamSynchronize(stream));
  std::printf("cudaMemcpy %d\n", cudaMemcpy(staging, device, sizeof host, cudaMemcpyDefault));
  std::printf("cudaFree %d\n", cudaFree(device));
  std::printf("cudaStreamDestroy %d\n", cudaStreamDestroy(stream));
  munmap(staging, sizeof host);
  std::printf("cudaFreeArray %d\n", cudaFreeArray(big));
  std::printf("cudaFreeMipmappedArray %d\n", cudaFreeMipmappedArray(levels));
  std::printf("cudaFreeArray %d\n", cudaFreeArray(volume));
  std::printf("cudaFreeArray %d\n", cudaFreeArray(b));
  std::printf("cudaFreeArray %d\n", cudaFreeArray(a));
  return 0;
}
