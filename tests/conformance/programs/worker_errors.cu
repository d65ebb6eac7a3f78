// worker_errors: errors raised from worker threads.  Each of --workers
// threads allocates a little device memory, then asks for far more than any
// GPU has; once every worker has its error, each handles it the way
// checkCudaErrors does -- print and exit(EXIT_FAILURE) -- so several threads
// call exit() at the same moment.
#include <pthread.h>

#include <vector>

#include "conformance.h"

namespace {

pthread_barrier_t all_failed;
size_t small_bytes;

void* worker(void*) {
  checkCudaErrors(cudaSetDevice(0));
  void* small = nullptr;
  checkCudaErrors(cudaMalloc(&small, small_bytes));
  void* huge = nullptr;
  const cudaError_t error = cudaMalloc(&huge, size_t{1} << 50);
  pthread_barrier_wait(&all_failed);
  checkCudaErrors(error);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "worker_errors";
  const sample::Flags flags(argc, argv, {"workers=", "bytes="}, "[--workers=W] [--bytes=N]");
  const int nworkers = static_cast<int>(flags.get("workers", 4));
  small_bytes = static_cast<size_t>(flags.get("bytes", 1 << 20));
  std::printf("[worker_errors] %d workers, each allocating %zu bytes and then 1 PiB\n", nworkers, small_bytes);
  std::fflush(stdout);
  checkCudaErrors(cudaSetDevice(0));

  pthread_barrier_init(&all_failed, nullptr, nworkers);
  std::vector<pthread_t> threads(nworkers);
  for (auto& t : threads) pthread_create(&t, nullptr, worker, nullptr);
  for (auto& t : threads) pthread_join(t, nullptr);
  std::printf("no worker saw an error\n");
  return conformance::finish(false);
}
