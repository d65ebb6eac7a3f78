// A stand-in libcudart.so.12 (CUDA 12.8's batched copies, which take a
// `failIdx` before the stream that CUDA 13 dropped): each call prints the
// arguments it received, so cuda12_batch_user can show that a hook in
// between passed every one of them on unchanged (test_interception.cpp).
// Test-only: kept out of lib/, which the bundle ships.
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace {
constexpr size_t kNoFailure = SIZE_MAX;  // what 12.8 writes to failIdx when no copy failed
}

extern "C" {

__attribute__((visibility("default"))) int cudaRuntimeGetVersion(int* version) {
  *version = 12080;
  return 0;
}

__attribute__((visibility("default"))) int cudaMemcpyBatchAsync(void** dsts, void** srcs, size_t* sizes,
                                                                size_t count, void* attrs, size_t* idxs,
                                                                size_t nattrs, size_t* fail, void* stream) {
  std::printf("runtime got cudaMemcpyBatchAsync(%p, %p, %p, %zu, %p, %p, %zu, %p, %p)\n", static_cast<void*>(dsts),
              static_cast<void*>(srcs), static_cast<void*>(sizes), count, attrs, static_cast<void*>(idxs), nattrs,
              static_cast<void*>(fail), stream);
  if (fail != nullptr) *fail = kNoFailure;
  return 0;
}

__attribute__((visibility("default"))) int cudaMemcpy3DBatchAsync(size_t n, void* ops, size_t* fail,
                                                                  unsigned long long flags, void* stream) {
  std::printf("runtime got cudaMemcpy3DBatchAsync(%zu, %p, %p, %llu, %p)\n", n, ops, static_cast<void*>(fail), flags,
              stream);
  if (fail != nullptr) *fail = kNoFailure;
  return 0;
}

}  // extern "C"
