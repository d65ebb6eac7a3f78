// A program that never links the CUDA runtime: it dlopen()s libcudart.so.13
// with RTLD_LOCAL and calls through dlsym pointers, as plugins and Python
// extensions do. gpuscope must still see every call.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

using MallocFn = int (*)(void**, size_t);
using FreeFn = int (*)(void*);
using MemcpyFn = int (*)(void*, const void*, size_t, int);
using SyncFn = int (*)();

template <class Fn> Fn must(void* lib, const char* name) {
  auto* p = reinterpret_cast<Fn>(dlsym(lib, name));
  if (p == nullptr) {
    std::fprintf(stderr, "dlopen_cudart: %s: %s\n", name, dlerror());
    std::exit(3);
  }
  return p;
}

int main(int argc, char** argv) {
  const int copies = argc > 1 ? std::atoi(argv[1]) : 3;
  void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen_cudart: %s\n", dlerror());
    return 2;
  }
  auto cuda_malloc = must<MallocFn>(lib, "cudaMalloc");
  auto cuda_free = must<FreeFn>(lib, "cudaFree");
  auto cuda_memcpy = must<MemcpyFn>(lib, "cudaMemcpy");
  auto cuda_sync = must<SyncFn>(lib, "cudaDeviceSynchronize");
  std::vector<char> host(1 << 20, 7);
  void* dev = nullptr;
  if (cuda_malloc(&dev, host.size()) != 0) return 1;
  for (int i = 0; i < copies; ++i)
    if (cuda_memcpy(dev, host.data(), host.size(), 1 /* cudaMemcpyHostToDevice */) != 0) return 1;
  if (cuda_sync() != 0 || cuda_free(dev) != 0) return 1;
  std::printf("dlopen_cudart: %d copies\n", copies);
  return 0;
}
