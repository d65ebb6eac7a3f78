// An LD_PRELOAD library that intercepts the driver the way gpuscope does:
// it overrides dlsym, hands out its own cuGetProcAddress for
// "cuGetProcAddress_v2", rewraps the pointer returned for "cuGetProcAddress"
// and wraps cuMemAlloc.  test_hook.cpp uses it to prove simgpu's runtime
// reaches the driver only through those paths.
#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>

namespace {

using DlsymFn = void* (*)(void*, const char*);
using GpaFn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using AllocFn = CUresult (*)(CUdeviceptr*, size_t);

GpaFn g_real_gpa = nullptr;
AllocFn g_real_alloc = nullptr;
std::mutex g_mu;
std::vector<std::pair<std::string, cuuint64_t>> g_lookups;
int g_alloc_calls = 0;

DlsymFn real_dlsym() {
  static DlsymFn fn = [] {
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<DlsymFn>(p);
  }();
  return fn;
}

CUresult hooked_alloc(CUdeviceptr* p, size_t n) {
  {
    std::lock_guard lock(g_mu);
    ++g_alloc_calls;
  }
  return g_real_alloc(p, n);
}

CUresult hooked_gpa(const char* symbol, void** pfn, int version, cuuint64_t flags,
                    CUdriverProcAddressQueryResult* status) {
  const CUresult r = g_real_gpa(symbol, pfn, version, flags, status);
  std::lock_guard lock(g_mu);
  g_lookups.emplace_back(symbol, flags);
  if (r != CUDA_SUCCESS) return r;
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) *pfn = reinterpret_cast<void*>(&hooked_gpa);
  if (std::strcmp(symbol, "cuMemAlloc") == 0) {
    g_real_alloc = reinterpret_cast<AllocFn>(*pfn);
    *pfn = reinterpret_cast<void*>(&hooked_alloc);
  }
  return r;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  void* p = real_dlsym()(handle, name);
  if (p && std::strcmp(name, "cuGetProcAddress_v2") == 0) {
    g_real_gpa = reinterpret_cast<GpaFn>(p);
    return reinterpret_cast<void*>(&hooked_gpa);
  }
  return p;
}

__attribute__((visibility("default"))) int simgpu_hook_lookups(const char* symbol, unsigned long long flags) {
  std::lock_guard lock(g_mu);
  int n = 0;
  for (const auto& [s, f] : g_lookups) n += s == symbol && f == flags;
  return n;
}

__attribute__((visibility("default"))) int simgpu_hook_alloc_calls() {
  std::lock_guard lock(g_mu);
  return g_alloc_calls;
}

}  // extern "C"
