// A program built against CUDA 12.8, making its two batched copies and a
// prefetch (whose CUDA 12 form takes a device number and the stream): each
// prints the arguments it passes, and the runtime (fake_old_cudart.cpp)
// prints what it received. Traced, the lines must still agree: gpuscope's
// unversioned hooks interpose CUDA 12's entry points too, whose parameter
// lists are longer than CUDA 13's.
#define cudaMemcpyBatchAsync gpuscope_test_cuda13_cudaMemcpyBatchAsync
#define cudaMemcpy3DBatchAsync gpuscope_test_cuda13_cudaMemcpy3DBatchAsync
#define cudaMemPrefetchAsync gpuscope_test_cuda13_cudaMemPrefetchAsync
#include <cuda_runtime_api.h>
#undef cudaMemcpyBatchAsync
#undef cudaMemcpy3DBatchAsync
#undef cudaMemPrefetchAsync

#include <cstdint>
#include <cstdio>

// CUDA 12.8's declarations.
extern "C" cudaError_t cudaMemcpyBatchAsync(void** dsts, void** srcs, size_t* sizes, size_t count,
                                            cudaMemcpyAttributes* attrs, size_t* idxs, size_t nattrs,
                                            size_t* fail, cudaStream_t stream);
extern "C" cudaError_t cudaMemcpy3DBatchAsync(size_t n, cudaMemcpy3DBatchOp* ops, size_t* fail,
                                              unsigned long long flags, cudaStream_t stream);
extern "C" cudaError_t cudaMemPrefetchAsync(const void* p, size_t count, int device, cudaStream_t stream);

int main() {
  static char host[3][4096], device[3][4096];
  void* dsts[] = {device[0], device[1], device[2]};
  void* srcs[] = {host[0], host[1], host[2]};
  size_t sizes[] = {4096, 4096, 1024};
  cudaMemcpyAttributes attrs[1] = {};
  size_t idxs[] = {0};
  size_t fail = 7;
  // A stream handle no runtime would make, so that a lost one shows.
  const auto stream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5eed000});
  std::printf("runtime got cudaMemcpyBatchAsync(%p, %p, %p, %zu, %p, %p, %zu, %p, %p)\n", static_cast<void*>(dsts),
              static_cast<void*>(srcs), static_cast<void*>(sizes), size_t{3}, static_cast<void*>(attrs),
              static_cast<void*>(idxs), size_t{1}, static_cast<void*>(&fail), static_cast<void*>(stream));
  const cudaError_t batch = cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, idxs, 1, &fail, stream);
  std::printf("result %d, failIdx %s\n", batch, fail == SIZE_MAX ? "none" : "unchanged");
  cudaMemcpy3DBatchOp ops[2] = {};
  for (cudaMemcpy3DBatchOp& op : ops) {
    op.src.type = op.dst.type = cudaMemcpyOperandTypePointer;
    op.src.op.ptr.ptr = host[0], op.dst.op.ptr.ptr = device[0];
    op.extent = cudaExtent{64, 16, 2};
  }
  fail = 7;
  std::printf("runtime got cudaMemcpy3DBatchAsync(%zu, %p, %p, %llu, %p)\n", size_t{2}, static_cast<void*>(ops),
              static_cast<void*>(&fail), 0ull, static_cast<void*>(stream));
  const cudaError_t batch_3d = cudaMemcpy3DBatchAsync(2, ops, &fail, 0, stream);
  std::printf("result %d, failIdx %s\n", batch_3d, fail == SIZE_MAX ? "none" : "unchanged");
  static char managed[1 << 20];
  std::printf("runtime got cudaMemPrefetchAsync(%p, %zu, %d, %p)\n", static_cast<void*>(managed), sizeof managed, 0,
              static_cast<void*>(stream));
  std::printf("result %d\n", cudaMemPrefetchAsync(managed, sizeof managed, 0, stream));
  return 0;
}
