// A library whose ELF constructor uses CUDA before libgpuscope.so's own
// constructors have run: the dynamic loader initializes a program's
// DT_NEEDED libraries before a preloaded one, whatever the constructor
// priority (libcublasLt's constructor looks up cuInit this way). Built
// twice, as libgpuscope_early_101.so (constructor(101)) and
// libgpuscope_early_default.so, both linked into early_user.
//
// EARLY_ACTIONS (comma-separated) says what the constructor does:
//   lookup   dlsym(RTLD_DEFAULT, ...) of a driver and a runtime function
//   runtime  dlopen libcudart.so.13, then a few runtime calls through dlsym
//   driver   dlopen libcuda.so.1, then cuInit through dlsym of that handle
//   thread   a thread making runtime calls while the constructors go on
//            (joined by early_finish_LABEL, from main)
//   inject   calls InitializeInjection of CUDA_INJECTION64_PATH, as the
//            CUDA driver does at CUDA initialization
//   copy     dlopens EARLY_COPY (another copy of libgpuscope.so) and calls
//            cudaGetDeviceCount through dlsym of that handle
// Every line printed is the same with and without gpuscope.
#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifndef EARLY_LABEL
#error "EARLY_LABEL names the library (a C identifier)"
#endif
#ifdef EARLY_PRIORITY
#define EARLY_CONSTRUCTOR __attribute__((constructor(EARLY_PRIORITY)))
#else
#define EARLY_CONSTRUCTOR __attribute__((constructor))
#endif
#define EARLY_CAT2(a, b) a##b
#define EARLY_CAT(a, b) EARLY_CAT2(a, b)
#define EARLY_STR2(a) #a
#define EARLY_STR(a) EARLY_STR2(a)
#define EARLY_NAME EARLY_STR(EARLY_LABEL)

namespace {

using CountFn = int (*)(int*);
using MallocFn = int (*)(void**, size_t);
using FreeFn = int (*)(void*);
using InitFn = int (*)(unsigned);
using InjectFn = int (*)();

constexpr int kThreadRounds = 200;

bool wanted(const char* action) {
  const char* list = std::getenv("EARLY_ACTIONS");
  if (list == nullptr) return false;
  const std::string padded = "," + std::string(list) + ",";
  return padded.find("," + std::string(action) + ",") != std::string::npos;
}

template <class Fn> Fn symbol(void* handle, const char* name) {
  return handle != nullptr ? reinterpret_cast<Fn>(dlsym(handle, name)) : nullptr;
}

void lookup() {
  std::printf("%s: dlsym(RTLD_DEFAULT, cuInit): %s\n", EARLY_NAME,
              dlsym(RTLD_DEFAULT, "cuInit") != nullptr ? "found" : "absent");
  std::printf("%s: dlsym(RTLD_DEFAULT, cudaGetDeviceCount): %s\n", EARLY_NAME,
              dlsym(RTLD_DEFAULT, "cudaGetDeviceCount") != nullptr ? "found" : "absent");
}

void runtime_calls() {
  void* runtime = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  const auto count = symbol<CountFn>(runtime, "cudaGetDeviceCount");
  const auto alloc = symbol<MallocFn>(runtime, "cudaMalloc");
  const auto release = symbol<FreeFn>(runtime, "cudaFree");
  if (count == nullptr || alloc == nullptr || release == nullptr) {
    std::printf("%s: libcudart.so.13 not usable\n", EARLY_NAME);
    return;
  }
  int devices = -1;
  const int rc = count(&devices);
  void* p = nullptr;
  const int malloc_rc = alloc(&p, 1 << 20);
  std::printf("%s: cudaGetDeviceCount %d (%d devices), cudaMalloc %d, cudaFree %d\n", EARLY_NAME, rc, devices,
              malloc_rc, release(p));
}

// Also what the lookup leaves behind: errno and dlerror() as glibc leaves
// them after a lookup that succeeds.
void driver_calls() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  dlerror();
  errno = 77;
  const auto init = symbol<InitFn>(driver, "cuInit");
  const int lookup_errno = errno;
  const char* error = dlerror();
  std::printf("%s: cuInit through libcuda.so.1's handle: %d (errno %d, dlerror %s)\n", EARLY_NAME,
              init != nullptr ? init(0) : -1, lookup_errno, error != nullptr ? error : "none");
}

pthread_t g_worker;
bool g_worker_started = false;
int g_worker_failures = 0;

void* worker(void*) {
  void* runtime = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  const auto alloc = symbol<MallocFn>(runtime, "cudaMalloc");
  const auto release = symbol<FreeFn>(runtime, "cudaFree");
  if (alloc == nullptr || release == nullptr) {
    g_worker_failures = -1;
    return nullptr;
  }
  for (int i = 0; i < kThreadRounds; ++i) {
    void* p = nullptr;
    g_worker_failures += alloc(&p, 4096) != 0;
    g_worker_failures += release(p) != 0;
  }
  return nullptr;
}

void inject() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  const auto init = symbol<InjectFn>(path != nullptr ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr,
                                     "InitializeInjection");
  std::printf("%s: InitializeInjection: %d\n", EARLY_NAME, init != nullptr ? init() : -1);
}

void copy_handle_call() {
  const char* path = std::getenv("EARLY_COPY");
  const auto count = symbol<CountFn>(path != nullptr ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr,
                                     "cudaGetDeviceCount");
  int devices = -1;
  const int rc = count != nullptr ? count(&devices) : -1;
  std::printf("%s: cudaGetDeviceCount through another copy's handle: %d (%d devices)\n", EARLY_NAME, rc, devices);
}

EARLY_CONSTRUCTOR void early() {
  if (wanted("lookup")) lookup();
  if (wanted("runtime")) runtime_calls();
  if (wanted("driver")) driver_calls();
  if (wanted("thread")) g_worker_started = pthread_create(&g_worker, nullptr, worker, nullptr) == 0;
  if (wanted("inject")) inject();
  if (wanted("copy")) copy_handle_call();
  std::fflush(stdout);
}

}  // namespace

extern "C" void EARLY_CAT(early_finish_, EARLY_LABEL)() {
  if (!g_worker_started) return;
  pthread_join(g_worker, nullptr);
  std::printf("%s: worker made %d rounds, %d failures\n", EARLY_NAME, kThreadRounds, g_worker_failures);
}
