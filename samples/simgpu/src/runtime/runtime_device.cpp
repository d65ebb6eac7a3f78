// Runtime entry points for devices, error strings and driver entry points.
#include <cstdio>
#include <cstring>

#include "../common/errors.hpp"
#include "runtime.hpp"

using simgpu::rt::api;
using simgpu::rt::driver_link;
using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;

namespace {

// The runtime's view of the driver before any context exists: loaded, and
// cuInit succeeded.  Device queries need no context.
cudaError_t driver_ready() {
  const simgpu::rt::DriverLink& link = driver_link();
  return link.loaded ? link.status : cudaErrorInsufficientDriver;
}

cudaError_t check_device(int dev) {
  if (cudaError_t e = driver_ready()) return e;
  int count = 0;
  if (cudaError_t e = from_driver(driver_link().legacy.cuDeviceGetCount(&count))) return e;
  return dev >= 0 && dev < count ? cudaSuccess : cudaErrorInvalidDevice;
}

int attribute(const DriverTable& d, CUdevice_attribute attr, int dev) {
  int v = 0;
  d.cuDeviceGetAttribute(&v, attr, dev);
  return v;
}

// cudaDeviceProp's int fields and the driver attribute each one reports.
struct IntProperty {
  int cudaDeviceProp::*field;
  CUdevice_attribute attr;
};
constexpr IntProperty kIntProperties[] = {
    {&cudaDeviceProp::regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
    {&cudaDeviceProp::warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
    {&cudaDeviceProp::maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
    {&cudaDeviceProp::major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
    {&cudaDeviceProp::minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
    {&cudaDeviceProp::multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
    {&cudaDeviceProp::integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED},
    {&cudaDeviceProp::canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY},
    {&cudaDeviceProp::concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS},
    {&cudaDeviceProp::ECCEnabled, CU_DEVICE_ATTRIBUTE_ECC_ENABLED},
    {&cudaDeviceProp::pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID},
    {&cudaDeviceProp::pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID},
    {&cudaDeviceProp::pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID},
    {&cudaDeviceProp::asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT},
    {&cudaDeviceProp::unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
    {&cudaDeviceProp::memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH},
    {&cudaDeviceProp::l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
    {&cudaDeviceProp::persistingL2CacheMaxSize, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE},
    {&cudaDeviceProp::maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
    {&cudaDeviceProp::streamPrioritiesSupported, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED},
    {&cudaDeviceProp::globalL1CacheSupported, CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED},
    {&cudaDeviceProp::localL1CacheSupported, CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED},
    {&cudaDeviceProp::regsPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
    {&cudaDeviceProp::managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY},
    {&cudaDeviceProp::concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS},
    {&cudaDeviceProp::computePreemptionSupported, CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED},
    {&cudaDeviceProp::cooperativeLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH},
    {&cudaDeviceProp::maxBlocksPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR},
    {&cudaDeviceProp::hostRegisterSupported, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED},
    {&cudaDeviceProp::memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED}};

void fill_properties(const DriverTable& d, int dev, cudaDeviceProp* p) {
  std::memset(p, 0, sizeof *p);
  d.cuDeviceGetName(p->name, sizeof p->name, dev);
  CUuuid uuid;
  if (d.cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) std::memcpy(&p->uuid, &uuid, sizeof uuid);
  d.cuDeviceTotalMem(&p->totalGlobalMem, dev);
  for (const IntProperty& prop : kIntProperties) p->*prop.field = attribute(d, prop.attr, dev);
  p->sharedMemPerBlock = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev);
  p->memPitch = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_PITCH, dev);
  p->totalConstMem = attribute(d, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, dev);
  p->textureAlignment = attribute(d, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, dev);
  p->sharedMemPerMultiprocessor = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev);
  p->sharedMemPerBlockOptin = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
  p->reservedSharedMemPerBlock = attribute(d, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, dev);
  const CUdevice_attribute dims[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  const CUdevice_attribute grid[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  for (int i = 0; i < 3; ++i) {
    p->maxThreadsDim[i] = attribute(d, dims[i], dev);
    p->maxGridSize[i] = attribute(d, grid[i], dev);
  }
}

template <bool PT>
cudaError_t entry_point(const char* symbol, void** fn, unsigned version, unsigned long long flags,
                        cudaDriverEntryPointQueryResult* status) {
  return api([&]() -> cudaError_t {
    if (!symbol || !fn) return cudaErrorInvalidValue;
    if (cudaError_t e = driver_ready(); e == cudaErrorInsufficientDriver) return e;
    // The _ptsz export turns the default search into a per-thread one.
    if (PT && flags == cudaEnableDefault) flags = cudaEnablePerThreadDefaultStream;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult r = driver_link().get_proc_address(symbol, fn, static_cast<int>(version), flags, &found);
    if (status) *status = static_cast<cudaDriverEntryPointQueryResult>(found);
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND ? cudaSuccess : from_driver(r);
  });
}

template <bool PT>
cudaError_t cudaGetDriverEntryPoint_impl(const char* symbol, void** fn, unsigned long long flags,
                                         cudaDriverEntryPointQueryResult* status) {
  return entry_point<PT>(symbol, fn, CUDART_VERSION, flags, status);
}

template <bool PT>
cudaError_t cudaGetDriverEntryPointByVersion_impl(const char* symbol, void** fn, unsigned version,
                                                  unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  return entry_point<PT>(symbol, fn, version, flags, status);
}

}  // namespace

extern "C" {

const char* CUDARTAPI cudaGetErrorName(cudaError_t error) {
  const char* name = simgpu::runtime_error_name(error);
  return name ? name : "unrecognized error code";
}

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
  const char* text = simgpu::runtime_error_string(error);
  return text ? text : "unrecognized error code";
}

cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
  return api([&]() -> cudaError_t {
    if (!count) return cudaErrorInvalidValue;
    *count = 0;
    if (cudaError_t e = driver_ready()) return e;
    return from_driver(driver_link().legacy.cuDeviceGetCount(count));
  });
}

cudaError_t CUDARTAPI cudaSetDevice(int device) {
  return api([&]() -> cudaError_t {
    if (cudaError_t e = check_device(device)) return e;
    simgpu::rt::current_device() = device;
    return simgpu::rt::ensure_context();  // CUDA 12+: cudaSetDevice initializes the device
  });
}

cudaError_t CUDARTAPI cudaInitDevice(int device, unsigned int, unsigned int) {
  return api([&]() -> cudaError_t {
    if (cudaError_t e = check_device(device)) return e;
    const int saved = simgpu::rt::current_device();
    simgpu::rt::current_device() = device;
    const cudaError_t e = simgpu::rt::ensure_context();
    simgpu::rt::current_device() = saved;
    return e;
  });
}

cudaError_t CUDARTAPI cudaGetDevice(int* device) {
  return api([&]() -> cudaError_t {
    if (!device) return cudaErrorInvalidValue;
    if (cudaError_t e = driver_ready()) return e;
    *device = simgpu::rt::current_device();
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  return api([&]() -> cudaError_t {
    if (!prop) return cudaErrorInvalidValue;
    if (cudaError_t e = check_device(device)) return e;
    fill_properties(driver_link().legacy, device, prop);
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  return api([&]() -> cudaError_t {
    if (!value) return cudaErrorInvalidValue;
    if (cudaError_t e = check_device(device)) return e;
    // cudaDeviceAttr and CUdevice_attribute share their numbering.
    return from_driver(driver_link().legacy.cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
  });
}

cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char* bus_id, int len, int device) {
  return api([&]() -> cudaError_t {
    if (cudaError_t e = check_device(device)) return e;
    return from_driver(driver_link().legacy.cuDeviceGetPCIBusId(bus_id, len, device));
  });
}

cudaError_t CUDARTAPI cudaDeviceGetByPCIBusId(int* device, const char* bus_id) {
  return api([&]() -> cudaError_t {
    if (cudaError_t e = driver_ready()) return e;
    return from_driver(driver_link().legacy.cuDeviceGetByPCIBusId(device, bus_id));
  });
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  return with_driver(false, [](const DriverTable& d) { return from_driver(d.cuCtxSynchronize(nullptr)); });
}

// simgpu keeps the primary context alive; a reset only drains the device.
cudaError_t CUDARTAPI cudaDeviceReset(void) { return cudaDeviceSynchronize(); }

cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned int flags) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuDevicePrimaryCtxSetFlags(simgpu::rt::current_device(), flags));
  });
}

cudaError_t CUDARTAPI cudaGetDeviceFlags(unsigned int* flags) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!flags) return cudaErrorInvalidValue;
    int active = 0;
    return from_driver(d.cuDevicePrimaryCtxGetState(simgpu::rt::current_device(), flags, &active));
  });
}

// cudaLimit and cudaFuncCache share the driver's numbering.
cudaError_t CUDARTAPI cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuCtxSetLimit(static_cast<CUlimit>(limit), value));
  });
}

cudaError_t CUDARTAPI cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuCtxGetLimit(value, static_cast<CUlimit>(limit)));
  });
}

cudaError_t CUDARTAPI cudaDeviceSetCacheConfig(cudaFuncCache config) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuCtxSetCacheConfig(static_cast<CUfunc_cache>(config)));
  });
}

cudaError_t CUDARTAPI cudaDeviceGetCacheConfig(cudaFuncCache* config) {
  return with_driver(false, [&](const DriverTable& d) {
    return from_driver(d.cuCtxGetCacheConfig(reinterpret_cast<CUfunc_cache*>(config)));
  });
}

// The first device at least as capable as asked (compute capability, then
// multiprocessors), else device 0: simgpu's devices differ in little else.
cudaError_t CUDARTAPI cudaChooseDevice(int* device, const cudaDeviceProp* wanted) {
  return api([&]() -> cudaError_t {
    if (!device || !wanted) return cudaErrorInvalidValue;
    int count = 0;
    if (cudaError_t e = cudaGetDeviceCount(&count)) return e;
    *device = 0;
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp p;
      if (cudaError_t e = cudaGetDeviceProperties(&p, i)) return e;
      const bool capable = p.major > wanted->major || (p.major == wanted->major && p.minor >= wanted->minor);
      if (capable && p.multiProcessorCount >= wanted->multiProcessorCount) {
        *device = i;
        break;
      }
    }
    return cudaSuccess;
  });
}

cudaError_t CUDARTAPI cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  return with_driver(false, [&](const DriverTable& d) { return from_driver(d.cuCtxGetStreamPriorityRange(least, greatest)); });
}

cudaError_t CUDARTAPI cudaProfilerStart(void) {
  return with_driver(false, [](const DriverTable& d) { return from_driver(d.cuProfilerStart()); });
}

cudaError_t CUDARTAPI cudaProfilerStop(void) {
  return with_driver(false, [](const DriverTable& d) { return from_driver(d.cuProfilerStop()); });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(cudaGetDriverEntryPoint, _ptsz,
                    (const char* symbol, void** fn, unsigned long long flags, cudaDriverEntryPointQueryResult* status),
                    (symbol, fn, flags, status))
SIMGPU_RUNTIME_DUAL(cudaGetDriverEntryPointByVersion, _ptsz,
                    (const char* symbol, void** fn, unsigned int version, unsigned long long flags,
                     cudaDriverEntryPointQueryResult* status),
                    (symbol, fn, version, flags, status))
