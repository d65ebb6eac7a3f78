/* Another LD_PRELOAD interposer of the CUDA driver, built the way GPU-sharing
   layers (HAMi-core's libvgpu.so) are: it overrides dlsym, answers lookups
   of the driver functions it wraps with its own, takes RTLD_NEXT relative to
   itself, and wraps cuMemAlloc_v2, saying so on stderr for every call.
   gpuscope preloaded before it must leave it in the call chain
   (test_loader.cpp). Test-only: kept out of lib/, which the bundle ships. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

typedef void* (*dlsym_fn)(void*, const char*);
typedef int (*alloc_fn)(unsigned long long*, size_t);

static dlsym_fn glibc_dlsym(void) {
  static dlsym_fn fn;
  if (fn == NULL) fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (fn == NULL) fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  return fn;
}

__attribute__((visibility("default"))) int cuMemAlloc_v2(unsigned long long* p, size_t bytes) {
  static const char line[] = "other interposer: cuMemAlloc_v2\n";
  if (write(2, line, sizeof line - 1) < 0) return 999;
  /* The driver's own, from its handle (it may be loaded RTLD_LOCAL). */
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  const alloc_fn next = driver != NULL ? (alloc_fn)glibc_dlsym()(driver, "cuMemAlloc_v2") : NULL;
  return next != NULL ? next(p, bytes) : 999;
}

__attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  if (handle == RTLD_NEXT) {
    /* After this library, as HAMi-core's answers: not a tail call, so glibc
       sees this library as the caller. */
    void* next = glibc_dlsym()(RTLD_NEXT, name);
    __asm__ volatile("" : "+r"(next));
    return next;
  }
  if (strcmp(name, "cuMemAlloc_v2") == 0) return (void*)&cuMemAlloc_v2;
  return glibc_dlsym()(handle, name);
}
