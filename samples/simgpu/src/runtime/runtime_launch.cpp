// Kernel registration and launch.  nvcc-generated code registers each fat
// binary and its kernels at startup (__cudaRegisterFatBinary /
// __cudaRegisterFunction); a <<<>>> launch pushes its configuration, the stub
// pops it and calls __cudaLaunchKernel with the handle from __cudaGetKernel.
// The runtime loads each fat binary into the device lazily with
// cuModuleLoadData and launches through cuLaunchKernel, so the driver (and a
// profiler behind cuGetProcAddress) sees a real module, function and launch.
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime.hpp"

using simgpu::rt::api;
using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;

namespace {

constexpr int kMaxDevices = 16;
constexpr int kFatbinWrapperMagic = 0x466243B1;

// __fatBinC_Wrapper_t: what nvcc passes to __cudaRegisterFatBinary.
struct FatbinWrapper {
  int magic;
  int version;
  const unsigned long long* data;
  void* filename_or_fatbins;
};

struct FatBinary {
  void* handle_slot;  // first member: the void** handle points here
  const void* image;
  std::array<CUmodule, kMaxDevices> modules{};
};

struct Kernel {
  FatBinary* binary;
  const void* host_function;
  std::string device_name;
  std::array<CUfunction, kMaxDevices> functions{};
};

struct LaunchConfig {
  dim3 grid, block;
  size_t shared_mem;
  cudaStream_t stream;
};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<FatBinary>> binaries;
  std::map<const void*, std::unique_ptr<Kernel>> by_host_function;
  std::set<const Kernel*> kernels;
};

// Never destroyed: registration runs from static constructors and
// unregistration from atexit handlers in any order relative to ours.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

thread_local std::vector<LaunchConfig> t_configs;

// A host stub address (what <<<>>> and cudaLaunchKernel pass) or a handle
// from __cudaGetKernel / cudaGetKernel.
Kernel* find_kernel(const void* func) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (auto it = r.by_host_function.find(func); it != r.by_host_function.end()) return it->second.get();
  auto* k = static_cast<const Kernel*>(func);
  return r.kernels.count(k) ? const_cast<Kernel*>(k) : nullptr;
}

// The binary's module on the current device, loaded on first use (with r.mu held).
cudaError_t module_locked(const DriverTable& d, FatBinary* binary, CUmodule* out) {
  CUmodule& module = binary->modules[simgpu::rt::current_device()];
  if (!module)
    if (cudaError_t e = from_driver(d.cuModuleLoadData(&module, binary->image))) return e;
  *out = module;
  return cudaSuccess;
}

cudaError_t function_for(const DriverTable& d, Kernel* k, CUfunction* out) {
  const int dev = simgpu::rt::current_device();
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (!k->functions[dev]) {
    CUmodule module = nullptr;
    if (cudaError_t e = module_locked(d, k->binary, &module)) return e;
    if (cudaError_t e = from_driver(d.cuModuleGetFunction(&k->functions[dev], module, k->device_name.c_str())))
      return e == cudaErrorSymbolNotFound ? cudaErrorInvalidDeviceFunction : e;
  }
  *out = k->functions[dev];
  return cudaSuccess;
}

cudaError_t launch(const void* func, dim3 grid, dim3 block, void** args, size_t shared_mem, cudaStream_t s,
                   bool per_thread, bool cooperative = false) {
  return with_driver(per_thread, [&](const DriverTable& d) -> cudaError_t {
    CUfunction f = nullptr;
    if (cudaError_t e = simgpu::rt::kernel_function(d, func, &f)) return e;
    const auto smem = static_cast<unsigned>(shared_mem);
    const CUresult r =
        cooperative ? d.cuLaunchCooperativeKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem, s, args)
                    : d.cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem, s, args, nullptr);
    // The driver rejects bad dimensions as invalid values; the runtime calls
    // that an invalid configuration.
    return r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidConfiguration : from_driver(r);
  });
}

}  // namespace

const void* simgpu::rt::host_function(CUfunction f) {
  if (!f) return nullptr;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& [host, k] : r.by_host_function)
    if (std::find(k->functions.begin(), k->functions.end(), f) != k->functions.end()) return host;
  return nullptr;
}

cudaError_t simgpu::rt::module_of(const DriverTable& d, void** fatbin_handle, CUmodule* out) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return module_locked(d, reinterpret_cast<FatBinary*>(fatbin_handle), out);
}

cudaError_t simgpu::rt::kernel_function(const DriverTable& d, const void* func, CUfunction* out) {
  Kernel* k = find_kernel(func);
  return k ? function_for(d, k, out) : cudaErrorInvalidDeviceFunction;
}

namespace {

template <bool PT>
cudaError_t __cudaLaunchKernel_impl(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_mem,
                                    cudaStream_t s) {
  return launch(kernel, grid, block, args, shared_mem, s, PT);
}

template <bool PT>
cudaError_t cudaLaunchKernel_impl(const void* func, dim3 grid, dim3 block, void** args, size_t shared_mem,
                                  cudaStream_t s) {
  return launch(func, grid, block, args, shared_mem, s, PT);
}

template <bool PT>
cudaError_t cudaLaunchCooperativeKernel_impl(const void* func, dim3 grid, dim3 block, void** args, size_t shared_mem,
                                             cudaStream_t s) {
  return launch(func, grid, block, args, shared_mem, s, PT, true);
}

template <bool PT>
cudaError_t cudaLaunchKernelExC_impl(const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (!config || (config->numAttrs && !config->attrs)) return simgpu::rt::record(cudaErrorInvalidValue);
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeCooperative) cooperative = config->attrs[i].val.cooperative != 0;
  return launch(func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes, config->stream, PT,
                cooperative);
}

}  // namespace

extern "C" {

void** CUDARTAPI __cudaRegisterFatBinary(void* fat_cubin) {
  auto binary = std::make_unique<FatBinary>();
  const auto* wrapper = static_cast<const FatbinWrapper*>(fat_cubin);
  binary->image = wrapper && wrapper->magic == kFatbinWrapperMagic ? static_cast<const void*>(wrapper->data) : fat_cubin;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.binaries.push_back(std::move(binary));
  return &r.binaries.back()->handle_slot;
}

void CUDARTAPI __cudaRegisterFatBinaryEnd(void**) {}

void CUDARTAPI __cudaUnregisterFatBinary(void** handle) {
  // Runs from atexit: forget the kernels, leave modules to process teardown.
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto* binary = reinterpret_cast<FatBinary*>(handle);
  for (auto it = r.by_host_function.begin(); it != r.by_host_function.end();) {
    if (it->second->binary != binary) {
      ++it;
      continue;
    }
    r.kernels.erase(it->second.get());
    it = r.by_host_function.erase(it);
  }
}

void CUDARTAPI __cudaRegisterFunction(void** handle, const char* host_fun, char*, const char* device_name, int,
                                      uint3*, uint3*, dim3*, dim3*, int*) {
  auto kernel = std::make_unique<Kernel>();
  kernel->binary = reinterpret_cast<FatBinary*>(handle);
  kernel->host_function = host_fun;
  kernel->device_name = device_name ? device_name : "";
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.kernels.insert(kernel.get());
  r.by_host_function[host_fun] = std::move(kernel);
}

char CUDARTAPI __cudaInitModule(void**) { return 1; }

unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_mem, struct CUstream_st* s) {
  t_configs.push_back(LaunchConfig{grid, block, shared_mem, s});
  return 0;
}

cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_mem, void* stream) {
  if (t_configs.empty()) return simgpu::rt::record(cudaErrorMissingConfiguration);
  const LaunchConfig c = t_configs.back();
  t_configs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared_mem = c.shared_mem;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* host_fun) {
  return api([&]() -> cudaError_t {
    if (!kernel) return cudaErrorInvalidValue;
    const Kernel* k = find_kernel(host_fun);
    *kernel = reinterpret_cast<cudaKernel_t>(const_cast<Kernel*>(k));
    return k ? cudaSuccess : cudaErrorInvalidDeviceFunction;
  });
}

cudaError_t CUDARTAPI cudaGetKernel(cudaKernel_t* kernel, const void* entry) { return __cudaGetKernel(kernel, entry); }

cudaError_t CUDARTAPI cudaFuncGetName(const char** name, const void* func) {
  return api([&]() -> cudaError_t {
    if (!name) return cudaErrorInvalidValue;
    const Kernel* k = find_kernel(func);
    if (!k) return cudaErrorInvalidDeviceFunction;
    *name = k->device_name.c_str();
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaGetFuncBySymbol(cudaFunction_t* function, const void* symbol) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!function) return cudaErrorInvalidValue;
    return simgpu::rt::kernel_function(d, symbol, function);
  });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(__cudaLaunchKernel, _ptsz,
                    (cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared_mem, cudaStream_t s),
                    (kernel, grid, block, args, shared_mem, s))
SIMGPU_RUNTIME_DUAL(cudaLaunchKernel, _ptsz,
                    (const void* func, dim3 grid, dim3 block, void** args, size_t shared_mem, cudaStream_t s),
                    (func, grid, block, args, shared_mem, s))
SIMGPU_RUNTIME_DUAL(cudaLaunchCooperativeKernel, _ptsz,
                    (const void* func, dim3 grid, dim3 block, void** args, size_t shared_mem, cudaStream_t s),
                    (func, grid, block, args, shared_mem, s))
SIMGPU_RUNTIME_DUAL(cudaLaunchKernelExC, _ptsz, (const cudaLaunchConfig_t* config, const void* func, void** args),
                    (config, func, args))
