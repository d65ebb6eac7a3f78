#include "canary.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

namespace gpuscope::doctor {
namespace {

// The driver API types the canary needs, as cuda.h declares them (64-bit).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;

// Each copy is sized to take about kCopyTargetS on this link (a slow or
// degraded link would otherwise hold the command up), between these bounds.
constexpr size_t kMinCopyBytes = size_t{1} << 20, kMaxCopyBytes = size_t{64} << 20;
constexpr double kCopyTargetS = 0.010;
constexpr int kRepetitions = 5;  // of each copy, after one warm-up; the best counts
constexpr int kLaunches = 200;   // after 10 warm-ups; the median counts

// An empty kernel as PTX, which every driver JIT-compiles for its GPU.
constexpr char kEmptyKernelPtx[] =
    ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry gpuscope_canary_empty()\n{\n\tret;\n}\n";

struct DriverApi {
  CUresult (*init)(unsigned);
  CUresult (*device_get_count)(int*);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*device_get_pci_bus_id)(char*, int, CUdevice);
  CUresult (*primary_ctx_retain)(CUctx_st**, CUdevice);
  CUresult (*primary_ctx_release)(CUdevice);
  CUresult (*ctx_set_current)(CUctx_st*);
  CUresult (*ctx_synchronize)();
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*mem_alloc_host)(void**, size_t);
  CUresult (*mem_free_host)(void*);
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t);
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t);
  CUresult (*module_load_data)(CUmod_st**, const void*);
  CUresult (*module_unload)(CUmod_st*);
  CUresult (*module_get_function)(CUfunc_st**, CUmod_st*, const char*);
  CUresult (*launch_kernel)(CUfunc_st*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream_st*, void**, void**);
  CUresult (*event_create)(CUevent_st**, unsigned);
  CUresult (*event_destroy)(CUevent_st*);
  CUresult (*event_record)(CUevent_st*, CUstream_st*);
  CUresult (*event_synchronize)(CUevent_st*);
  CUresult (*event_elapsed_time)(float*, CUevent_st*, CUevent_st*);
};

// Opens libcuda.so.1 (kept loaded: the process ends soon) and resolves the
// API; the first symbol it lacks is the error.
bool open_driver(DriverApi* api, std::string* error) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    *error = fmt::format("no CUDA driver: {}", dlerror());
    return false;
  }
  const auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (fn == nullptr && error->empty()) *error = fmt::format("libcuda.so.1 has no {}", name);
  };
  resolve(api->init, "cuInit");
  resolve(api->device_get_count, "cuDeviceGetCount");
  resolve(api->device_get, "cuDeviceGet");
  resolve(api->device_get_pci_bus_id, "cuDeviceGetPCIBusId");
  resolve(api->primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  resolve(api->primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
  resolve(api->ctx_set_current, "cuCtxSetCurrent");
  resolve(api->ctx_synchronize, "cuCtxSynchronize");
  resolve(api->mem_alloc, "cuMemAlloc_v2");
  resolve(api->mem_free, "cuMemFree_v2");
  resolve(api->mem_alloc_host, "cuMemAllocHost_v2");
  resolve(api->mem_free_host, "cuMemFreeHost");
  resolve(api->memcpy_htod, "cuMemcpyHtoD_v2");
  resolve(api->memcpy_dtoh, "cuMemcpyDtoH_v2");
  resolve(api->module_load_data, "cuModuleLoadData");
  resolve(api->module_unload, "cuModuleUnload");
  resolve(api->module_get_function, "cuModuleGetFunction");
  resolve(api->launch_kernel, "cuLaunchKernel");
  resolve(api->event_create, "cuEventCreate");
  resolve(api->event_destroy, "cuEventDestroy_v2");
  resolve(api->event_record, "cuEventRecord");
  resolve(api->event_synchronize, "cuEventSynchronize");
  resolve(api->event_elapsed_time, "cuEventElapsedTime");
  return error->empty();
}

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// "00000000:18:00.0" and "0000:18:00.0" name the same device.
std::string without_domain(const std::string& bus_id) {
  const size_t colon = bus_id.find(':');
  std::string rest = colon == std::string::npos ? bus_id : bus_id.substr(colon);
  for (char& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return rest;
}

// The CUDA ordinal of the device at `bus_id`, or -1 when CUDA does not see it.
int cuda_ordinal(const DriverApi& api, const std::string& bus_id) {
  int count = 0;
  if (api.device_get_count(&count) != 0) return -1;
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    char id[32] = {};
    if (api.device_get(&dev, i) == 0 && api.device_get_pci_bus_id(id, sizeof id, dev) == 0 &&
        without_domain(id) == without_domain(bus_id))
      return i;
  }
  return -1;
}

// The best GB/s of `copy` over the repetitions, after one warm-up, timed by
// events around it on the legacy stream: the device's own account of the
// transfer, as NVIDIA's bandwidthTest times it (the host's clock would add
// the call's own overhead). 0 when a copy or an event fails.
template <class Copy> double best_rate(const DriverApi& api, size_t bytes, int repetitions, Copy copy) {
  CUevent_st *start = nullptr, *end = nullptr;
  if (api.event_create(&start, 0) != 0 || api.event_create(&end, 0) != 0) return 0;
  double best = copy() == 0 ? 0 : -1;
  for (int i = 0; i < repetitions && best >= 0; ++i) {
    float ms = 0;
    if (api.event_record(start, nullptr) != 0 || copy() != 0 || api.event_record(end, nullptr) != 0 ||
        api.event_synchronize(end) != 0 || api.event_elapsed_time(&ms, start, end) != 0 || ms <= 0) {
      best = -1;
      break;
    }
    best = std::max(best, static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  api.event_destroy(start);
  api.event_destroy(end);
  return std::max(best, 0.0);
}

// Median microseconds of an empty kernel's launch and synchronization; 0 when one fails.
double launch_round_trip_us(const DriverApi& api, std::string* error) {
  CUmod_st* module = nullptr;
  CUfunc_st* fn = nullptr;
  if (const CUresult r = api.module_load_data(&module, kEmptyKernelPtx); r != 0) {
    *error = fmt::format("cuModuleLoadData of an empty PTX kernel returned {}", r);
    return 0;
  }
  std::vector<double> us;
  CUresult r = api.module_get_function(&fn, module, "gpuscope_canary_empty");
  for (int i = 0; r == 0 && i < kLaunches + 10; ++i) {
    const double start = now_s();
    r = api.launch_kernel(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    if (r == 0) r = api.ctx_synchronize();
    if (i >= 10) us.push_back((now_s() - start) * 1e6);
  }
  api.module_unload(module);
  if (r != 0) {
    *error = fmt::format("launching an empty kernel returned {}", r);
    return 0;
  }
  std::nth_element(us.begin(), us.begin() + static_cast<long>(us.size() / 2), us.end());
  return us[us.size() / 2];
}

// The power of two between the bounds whose pinned upload takes about
// kCopyTargetS, from one timed upload of the smallest size.
size_t copy_size(const DriverApi& api, CUdeviceptr device, void* pinned) {
  const double gbps = best_rate(api, kMinCopyBytes, 1, [&] { return api.memcpy_htod(device, pinned, kMinCopyBytes); });
  size_t bytes = kMinCopyBytes;
  while (bytes < kMaxCopyBytes && static_cast<double>(bytes * 2) <= gbps * 1e9 * kCopyTargetS) bytes *= 2;
  return bytes;
}

void measure(const DriverApi& api, CanaryFigures& f) {
  CUdeviceptr device = 0;
  void* pinned = nullptr;
  if (const CUresult r = api.mem_alloc(&device, kMaxCopyBytes); r != 0) {
    f.error = fmt::format("cuMemAlloc of {} MiB returned {}", kMaxCopyBytes >> 20, r);
    return;
  }
  if (const CUresult r = api.mem_alloc_host(&pinned, kMaxCopyBytes); r != 0) {
    f.error = fmt::format("cuMemAllocHost of {} MiB returned {}", kMaxCopyBytes >> 20, r);
    api.mem_free(device);
    return;
  }
  std::unique_ptr<char[]> pageable(new char[kMaxCopyBytes]);
  std::memset(pinned, 1, kMaxCopyBytes);
  std::memset(pageable.get(), 1, kMaxCopyBytes);  // touched, so no first-touch page fault is timed
  const size_t n = f.copy_bytes = copy_size(api, device, pinned);
  f.h2d_pinned_gbps = best_rate(api, n, kRepetitions, [&] { return api.memcpy_htod(device, pinned, n); });
  f.d2h_pinned_gbps = best_rate(api, n, kRepetitions, [&] { return api.memcpy_dtoh(pinned, device, n); });
  f.h2d_pageable_gbps = best_rate(api, n, kRepetitions, [&] { return api.memcpy_htod(device, pageable.get(), n); });
  f.d2h_pageable_gbps = best_rate(api, n, kRepetitions, [&] { return api.memcpy_dtoh(pageable.get(), device, n); });
  api.mem_free_host(pinned);
  api.mem_free(device);
  if (f.h2d_pinned_gbps == 0 || f.d2h_pinned_gbps == 0 || f.h2d_pageable_gbps == 0 || f.d2h_pageable_gbps == 0) {
    f.error = "a copy failed";
    return;
  }
  f.launch_us = launch_round_trip_us(api, &f.launch_error);
}

}  // namespace

CanaryFigures run_canary(const std::string& pci_bus_id) {
  CanaryFigures f;
  f.repetitions = kRepetitions;
  f.launches = kLaunches;
  DriverApi api{};
  if (!open_driver(&api, &f.error)) return f;
  if (const CUresult r = api.init(0); r != 0) {
    f.error = fmt::format("cuInit returned {}", r);
    return f;
  }
  const int ordinal = cuda_ordinal(api, pci_bus_id);
  CUdevice dev = 0;
  CUctx_st* ctx = nullptr;
  if (ordinal < 0 || api.device_get(&dev, ordinal) != 0) {
    f.error = "CUDA does not see this GPU (CUDA_VISIBLE_DEVICES)";
    return f;
  }
  if (const CUresult r = api.primary_ctx_retain(&ctx, dev); r != 0 || api.ctx_set_current(ctx) != 0) {
    f.error = fmt::format("cuDevicePrimaryCtxRetain returned {}", r);
    return f;
  }
  measure(api, f);
  api.ctx_set_current(nullptr);
  api.primary_ctx_release(dev);
  return f;
}

}  // namespace gpuscope::doctor
