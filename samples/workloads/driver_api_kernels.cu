// The kernel the driver_api sample loads at run time.  It is compiled to PTX
// (nvcc -ptx) when the sample is built and embedded in the program, which
// hands it to cuModuleLoadData as any JIT-loading application would.
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
