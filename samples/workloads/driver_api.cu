// driver_api: a program that uses the CUDA driver API directly, as JIT-based
// frameworks do: cuInit, a context, cuModuleLoadData on PTX embedded in the
// binary, cuModuleGetFunction, cuLaunchKernel, copies and synchronization.
// It links libcuda.so.1 (against the toolkit's stub at build time) and so
// runs on whichever driver the loader finds: a real one or simgpu's.
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common.hpp"
#include "vec_add_ptx.h"

namespace {

void check_cu(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = "?";
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "driver_api: %s failed: %s (%d)\n", what, name, static_cast<int>(r));
  std::exit(1);
}

#define CU(expr) check_cu((expr), #expr)

struct Buffers {
  CUdeviceptr a, b, c;
};

void one_round(CUfunction fn, const Buffers& d, const std::vector<float>& a, const std::vector<float>& b,
               std::vector<float>& c) {
  const size_t bytes = a.size() * sizeof(float);
  int n = static_cast<int>(a.size());
  CU(cuMemcpyHtoD(d.a, a.data(), bytes));
  CU(cuMemcpyHtoD(d.b, b.data(), bytes));
  CUdeviceptr pa = d.a, pb = d.b, pc = d.c;
  void* args[] = {&pa, &pb, &pc, &n};
  CU(cuLaunchKernel(fn, static_cast<unsigned>((n + 255) / 256), 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CU(cuCtxSynchronize());
  CU(cuMemcpyDtoH(c.data(), d.c, bytes));
}

}  // namespace

int main(int argc, char** argv) {
  sample::name() = "driver_api";
  const sample::Flags flags(argc, argv, {"n=", "iters="}, "[--n ELEMENTS] [--iters N]");
  const size_t n = static_cast<size_t>(flags.get("n", 1 << 18));
  const int iters = static_cast<int>(flags.get("iters", 3000));
  CU(cuInit(0));
  int count = 0;
  CU(cuDeviceGetCount(&count));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  char name[256];
  CU(cuDeviceGetName(name, sizeof name, dev));
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CUmodule module;
  CU(cuModuleLoadData(&module, vec_add_ptx));
  CUfunction fn;
  CU(cuModuleGetFunction(&fn, module, "vec_add"));

  Buffers d{};
  for (CUdeviceptr* p : {&d.a, &d.b, &d.c}) CU(cuMemAlloc(p, n * sizeof(float)));
  // c starts as a sentinel: simgpu leaves it (kernels do not compute there),
  // a real GPU overwrites it with a + b.
  CU(cuMemsetD32(d.c, 0x7fc00000u, n));
  std::vector<float> a(n), b(n), c(n);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 1000), b[i] = static_cast<float>(i % 7);
  const sample::Stopwatch watch;
  for (int it = 0; it < iters; ++it) one_round(fn, d, a, b, c);
  const double seconds = watch.seconds();

  const bool simulated = std::strstr(name, "(simulated)") != nullptr;
  for (size_t i = 0; i < n; i += 997) {
    const bool ok = simulated ? std::isnan(c[i]) : c[i] == a[i] + b[i];
    sample::expect(ok, simulated ? "sentinel survived the copy back" : "vec_add result");
  }
  std::vector<float> back(n);
  CU(cuMemcpyDtoH(back.data(), d.a, n * sizeof(float)));
  sample::expect(back == a, "input round trip");
  for (CUdeviceptr p : {d.a, d.b, d.c}) CU(cuMemFree(p));
  CU(cuModuleUnload(module));
  CU(cuDevicePrimaryCtxRelease(dev));
  sample::report("%d rounds of copy in, vec_add, copy out on %s (%d device(s)) in %.3f s", iters, name, count, seconds);
  return 0;
}
