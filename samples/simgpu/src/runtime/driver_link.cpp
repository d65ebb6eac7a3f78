// Loading the driver the way libcudart.so.13 does, and the per-thread state
// (last error, current device, bound context) every entry point shares.
#include <dlfcn.h>

#include <array>
#include <mutex>

#include "runtime.hpp"

namespace simgpu::rt {
namespace {

constexpr int kMaxDevices = 16;

struct ThreadState {
  cudaError_t last_error = cudaSuccess;
  int device = 0;
  CUcontext bound = nullptr;
};
thread_local ThreadState t_state;

// Resolves every table entry by base name; false if one is missing.
bool resolve(PFN_cuGetProcAddress_v12000 gpa, cuuint64_t flags, DriverTable& table) {
  bool complete = true;
  CUdriverProcAddressQueryResult status;
#define SIMGPU_RT_RESOLVE(name, version)                                                         \
  if (gpa(#name, reinterpret_cast<void**>(&table.name), CUDART_VERSION, flags, &status) != CUDA_SUCCESS) \
    complete = false;
  SIMGPU_RT_DRIVER_FUNCTIONS(SIMGPU_RT_RESOLVE)
#undef SIMGPU_RT_RESOLVE
  return complete;
}

DriverLink load_driver() {
  DriverLink link;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) return link;  // no driver: every call says cudaErrorInsufficientDriver
  // A plain dlsym, as the real runtime's: an LD_PRELOADed dlsym sees it.
  auto bootstrap = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
  if (!bootstrap) return link;
  // Every later lookup goes through the pointer the driver hands out for
  // "cuGetProcAddress" itself, which is where profilers hook in.
  CUdriverProcAddressQueryResult status;
  if (bootstrap("cuGetProcAddress", reinterpret_cast<void**>(&link.get_proc_address), CUDART_VERSION,
                CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS)
    link.get_proc_address = bootstrap;
  if (!resolve(link.get_proc_address, CU_GET_PROC_ADDRESS_DEFAULT, link.legacy) ||
      !resolve(link.get_proc_address, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, link.per_thread))
    return link;
  link.loaded = true;
  link.status = from_driver(link.legacy.cuInit(0));
  return link;
}

struct PrimaryContexts {
  std::array<std::once_flag, kMaxDevices> once;
  std::array<CUcontext, kMaxDevices> ctx{};
  std::array<cudaError_t, kMaxDevices> status{};
};

PrimaryContexts& primaries() {
  static PrimaryContexts p;
  return p;
}

}  // namespace

const DriverLink& driver_link() {
  static const DriverLink link = load_driver();
  return link;
}

cudaError_t record(cudaError_t e) {
  // "Not ready" answers a query; it is not an error the program made.
  if (e != cudaSuccess && e != cudaErrorNotReady) t_state.last_error = e;
  return e;
}

cudaError_t from_driver(CUresult r) {
  // The runtime's codes equal the driver's for every failure simgpu reports.
  return static_cast<cudaError_t>(r);
}

int& current_device() { return t_state.device; }

cudaError_t primary_context(int dev, CUcontext* out) {
  const DriverLink& link = driver_link();
  if (!link.loaded || link.status != cudaSuccess) return link.status;
  if (dev < 0 || dev >= kMaxDevices) return cudaErrorInvalidDevice;
  PrimaryContexts& p = primaries();
  std::call_once(p.once[dev], [&] { p.status[dev] = from_driver(link.legacy.cuDevicePrimaryCtxRetain(&p.ctx[dev], dev)); });
  *out = p.ctx[dev];
  return p.status[dev];
}

cudaError_t ensure_context() {
  CUcontext ctx = nullptr;
  if (cudaError_t e = primary_context(t_state.device, &ctx)) return e;
  if (t_state.bound != ctx) {
    if (cudaError_t e = from_driver(driver_link().legacy.cuCtxSetCurrent(ctx))) return e;
    t_state.bound = ctx;
  }
  return cudaSuccess;
}

}  // namespace simgpu::rt

// --- errors and versions: no driver needed -------------------------------------------

extern "C" {

cudaError_t CUDARTAPI cudaGetLastError(void) {
  const cudaError_t e = simgpu::rt::t_state.last_error;
  simgpu::rt::t_state.last_error = cudaSuccess;
  return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return simgpu::rt::t_state.last_error; }

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* version) {
  if (!version) return simgpu::rt::record(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

// 0 without a driver, like the real runtime: the call itself succeeds.
cudaError_t CUDARTAPI cudaDriverGetVersion(int* version) {
  if (!version) return simgpu::rt::record(cudaErrorInvalidValue);
  const simgpu::rt::DriverLink& link = simgpu::rt::driver_link();
  *version = 0;
  if (link.loaded) return simgpu::rt::record(simgpu::rt::from_driver(link.legacy.cuDriverGetVersion(version)));
  return cudaSuccess;
}

}  // extern "C"
