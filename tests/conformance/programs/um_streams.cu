// um_streams: unified memory tasks spread over streams.  Every task gets its
// own managed buffer, attached to one stream, filled on the host, advised to
// live on the GPU, prefetched there, scaled by a kernel, prefetched back to
// the host and checked there; --tasks tasks rotate over --streams streams.
#include <vector>

#include "conformance.h"

__global__ void scale_in_place(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

int main(int argc, char** argv) {
  sample::name() = "um_streams";
  const sample::Flags flags(argc, argv, {"tasks=", "streams=", "n="}, "[--tasks=T] [--streams=S] [--n=FLOATS per task]");
  const int ntasks = static_cast<int>(flags.get("tasks", 8));
  const int nstreams = static_cast<int>(flags.get("streams", 4));
  const int n = static_cast<int>(flags.get("n", 1 << 16));
  const size_t bytes = n * sizeof(float);
  std::printf("[um_streams] %d tasks of %d floats on %d streams\n", ntasks, n, nstreams);
  const float factor = conformance::kernel_results_checkable() ? 2.0f : 1.0f;

  int device = 0;
  checkCudaErrors(cudaGetDevice(&device));
  cudaMemLocation on_gpu = {}, on_host = {};
  on_gpu.type = cudaMemLocationTypeDevice, on_gpu.id = device;
  on_host.type = cudaMemLocationTypeHost;

  std::vector<cudaStream_t> streams(nstreams);
  for (auto& s : streams) checkCudaErrors(cudaStreamCreate(&s));
  std::vector<float*> data(ntasks);
  std::vector<float> expected(n);
  bool ok = true;
  for (int t = 0; t < ntasks; ++t) {
    cudaStream_t s = streams[t % nstreams];
    checkCudaErrors(cudaMallocManaged(&data[t], bytes));
    checkCudaErrors(cudaStreamAttachMemAsync(s, data[t], 0, cudaMemAttachSingle));
    checkCudaErrors(cudaStreamSynchronize(s));  // the host may touch it now
    conformance::fill(data[t], n, 10 + t);
    for (int i = 0; i < n; ++i) expected[i] = data[t][i] * factor;
    checkCudaErrors(cudaMemAdvise(data[t], bytes, cudaMemAdviseSetPreferredLocation, on_gpu));
    checkCudaErrors(cudaMemPrefetchAsync(data[t], bytes, on_gpu, 0, s));
    scale_in_place<<<(n + 255) / 256, 256, 0, s>>>(data[t], n, 2.0f);
    getLastCudaError("scale_in_place");
    checkCudaErrors(cudaMemPrefetchAsync(data[t], bytes, on_host, 0, s));
    checkCudaErrors(cudaStreamSynchronize(s));
    for (int i = 0; i < n && ok; ++i)
      if (data[t][i] != expected[i]) {
        std::fprintf(stderr, "um_streams: task %d element %d is %f, expected %f\n", t, i, data[t][i], expected[i]);
        ok = false;
      }
  }
  std::printf("%d tasks done\n", ntasks);

  for (float* d : data) checkCudaErrors(cudaFree(d));
  for (auto& s : streams) checkCudaErrors(cudaStreamDestroy(s));
  return conformance::finish(ok);
}
