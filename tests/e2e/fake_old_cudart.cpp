// A stand-in for an older CUDA runtime whose entry points took other
// parameters than CUDA 13's under the same name: built as libcudart.so.12
// (FAKE_CUDA_MAJOR 12: CUDA 12.8's batched copies, with a `failIdx` before
// the stream, and CUDA 12's cudaMemPrefetchAsync) and as libcudart.so.11.0 (11: CUDA 11's cudaGraphInstantiate
// with an error node and log buffer, cudaGraphExecUpdate with an error node
// and result). Each call prints the arguments it received, so the programs
// built against them (cuda12_batch_user, cuda11_graph_user) can show that a
// hook in between passed every one of them on unchanged
// (test_interception.cpp). Test-only: kept out of lib/, which the bundle ships.
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace {
constexpr size_t kNoFailure = SIZE_MAX;  // what 12.8 writes to failIdx when no copy failed
}

extern "C" {

__attribute__((visibility("default"))) int cudaRuntimeGetVersion(int* version) {
  *version = FAKE_CUDA_MAJOR == 11 ? 11080 : 12080;
  return 0;
}

#if FAKE_CUDA_MAJOR == 11
// An instantiation that fails, as CUDA 11 reports it: the error node and a
// message in the caller's log buffer.
__attribute__((visibility("default"))) int cudaGraphInstantiate(void** exec, void* graph, void** error_node,
                                                                char* log, size_t log_bytes) {
  std::printf("runtime got cudaGraphInstantiate(%p, %p, %p, %p, %zu)\n", static_cast<void*>(exec), graph,
              static_cast<void*>(error_node), static_cast<void*>(log), log_bytes);
  if (error_node != nullptr) *error_node = graph;
  if (log != nullptr && log_bytes != 0) std::snprintf(log, log_bytes, "node 0 cannot be instantiated");
  return 1;  // cudaErrorInvalidValue
}

__attribute__((visibility("default"))) int cudaGraphExecUpdate(void* exec, void* graph, void** error_node,
                                                               int* result) {
  std::printf("runtime got cudaGraphExecUpdate(%p, %p, %p, %p)\n", exec, graph, static_cast<void*>(error_node),
              static_cast<void*>(result));
  if (error_node != nullptr) *error_node = nullptr;
  if (result != nullptr) *result = 0;  // cudaGraphExecUpdateSuccess
  return 0;
}
#else

__attribute__((visibility("default"))) int cudaMemcpyBatchAsync(void** dsts, void** srcs, size_t* sizes,
                                                                size_t count, void* attrs, size_t* idxs,
                                                                size_t nattrs, size_t* fail, void* stream) {
  std::printf("runtime got cudaMemcpyBatchAsync(%p, %p, %p, %zu, %p, %p, %zu, %p, %p)\n", static_cast<void*>(dsts),
              static_cast<void*>(srcs), static_cast<void*>(sizes), count, attrs, static_cast<void*>(idxs), nattrs,
              static_cast<void*>(fail), stream);
  if (fail != nullptr) *fail = kNoFailure;
  return 0;
}

// CUDA 12's prefetch: a device number where 13 passes a location, and the
// stream where 13 passes flags.
__attribute__((visibility("default"))) int cudaMemPrefetchAsync(const void* p, size_t n, int device, void* stream) {
  std::printf("runtime got cudaMemPrefetchAsync(%p, %zu, %d, %p)\n", p, n, device, stream);
  return 0;
}

__attribute__((visibility("default"))) int cudaMemcpy3DBatchAsync(size_t n, void* ops, size_t* fail,
                                                                  unsigned long long flags, void* stream) {
  std::printf("runtime got cudaMemcpy3DBatchAsync(%zu, %p, %p, %llu, %p)\n", n, ops, static_cast<void*>(fail), flags,
              stream);
  if (fail != nullptr) *fail = kNoFailure;
  return 0;
}

#endif

}  // extern "C"
