// A program that finds the driver's functions the way the CUDA runtime and
// Python bindings do: dlopen("libcuda.so.1") and dlsym, then allocates once
// (test_loader.cpp: another interposer's dlsym must still answer it).
#include <dlfcn.h>

#include <cstdio>

int main() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) return 2;
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(cuda, "cuInit"));
  auto get = reinterpret_cast<int (*)(int*, int)>(dlsym(cuda, "cuDeviceGet"));
  auto retain = reinterpret_cast<int (*)(void**, int)>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  auto make_current = reinterpret_cast<int (*)(void*)>(dlsym(cuda, "cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<int (*)(unsigned long long*, size_t)>(dlsym(cuda, "cuMemAlloc_v2"));
  if (init == nullptr || get == nullptr || retain == nullptr || make_current == nullptr || alloc == nullptr) return 3;
  int device = 0;
  void* context = nullptr;
  unsigned long long p = 0;
  std::printf("cuInit %d\n", init(0));
  std::printf("cuDeviceGet %d\n", get(&device, 0));
  std::printf("cuDevicePrimaryCtxRetain %d\n", retain(&context, device));
  std::printf("cuCtxSetCurrent %d\n", make_current(context));
  std::printf("cuMemAlloc_v2 %d\n", alloc(&p, 1 << 20));
  return 0;
}
