// Driver API entry points of simgpu's libcuda.so.1: initialization, devices,
// contexts, streams, events, modules and launches.  Memory entry points are in
// driver_memory_api.cpp; everything else the real driver exports is a stub
// (driver_exports.cpp).
#include <cstdio>
#include <cstring>
#include <string>

#include "../common/errors.hpp"
#include "driver_api.hpp"
#include "activity.hpp"
#include "../common/simgpu_globals.h"

// cuda.h maps these names to their _v2 variants; the original exports exist
// too (old binaries bind to them) and behave the same here.
#undef cuEventElapsedTime
#undef cuDeviceGetUuid
extern "C" CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end);
extern "C" CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev);

using simgpu::drv::Model;
namespace sm = simgpu::drv::sm;
using simgpu::drv::with_model;

namespace {

CUresult check_device(Model& m, CUdevice dev) {
  return dev >= 0 && dev < m.device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// Attributes that depend on the node's description of the device.
bool described_attribute(const simgpu::DeviceDesc& d, CUdevice_attribute attr, int* v) {
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = static_cast<int>(d.sm_mhz * 1000); return true;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = static_cast<int>(d.mem_mhz * 1000); return true;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = d.sm_count; return true;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = d.max_threads_per_sm; return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = d.cc_major; return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = d.cc_minor; return true;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = static_cast<int>(d.pci_bus); return true;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = static_cast<int>(d.pci_device); return true;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = static_cast<int>(d.pci_domain); return true;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *v = 1; return true;
    default: return false;
  }
}

// Architectural constants of a Hopper-class GPU; attributes not listed are 0.
int constant_attribute(CUdevice_attribute attr) {
  struct Entry { CUdevice_attribute attr; int value; };
  static constexpr Entry table[] = {
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, sm::kMaxThreadsPerBlock}, {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024}, {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647}, {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535}, {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, sm::kSharedPerBlock},
      {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536}, {CU_DEVICE_ATTRIBUTE_WARP_SIZE, sm::kWarpSize},
      {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647}, {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, sm::kRegisters},
      {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512}, {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
      {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1}, {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 6144}, {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
      {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2}, {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1}, {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, sm::kSharedBytes},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, sm::kRegisters}, {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1}, {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1}, {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, sm::kSharedPerBlockOptin},
      {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1}, {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, sm::kMaxBlocks},
      {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1}, {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, sm::kReservedSharedPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 32505856}};
  for (const Entry& e : table)
    if (e.attr == attr) return e.value;
  return 0;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "GPU-5a1c0de0-0000-..." -> the 16 bytes CUuuid carries.
void parse_uuid(const std::string& text, CUuuid* out) {
  std::memset(out->bytes, 0, sizeof out->bytes);
  size_t n = 0;
  int high = -1;
  for (size_t i = text.rfind("GPU-", 0) == 0 ? 4 : 0; i < text.size() && n < 16; ++i) {
    const int d = hex_digit(text[i]);
    if (d < 0) continue;
    if (high < 0) {
      high = d;
    } else {
      out->bytes[n++] = static_cast<char>(high << 4 | d);
      high = -1;
    }
  }
}


template <bool PT>
CUresult cuStreamQuery_impl(CUstream s) {
  return with_model([&](Model& m) { return m.stream_query(s, PT); });
}
template <bool PT>
CUresult cuStreamSynchronize_impl(CUstream s) {
  return with_model([&](Model& m) { return m.stream_synchronize(s, PT); });
}
template <bool PT>
CUresult cuStreamWaitEvent_impl(CUstream s, CUevent e, unsigned flags) {
  if (flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.stream_wait_event(s, e, PT, flags); });
}
template <bool PT>
CUresult cuStreamGetFlags_impl(CUstream s, unsigned* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.stream_get(s, PT, flags, nullptr); });
}
template <bool PT>
CUresult cuStreamGetPriority_impl(CUstream s, int* priority) {
  if (!priority) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.stream_get(s, PT, nullptr, priority); });
}
template <bool PT>
CUresult cuStreamGetId_impl(CUstream s, unsigned long long* id) {
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.stream_identity(s, PT, id, nullptr, nullptr); });
}
template <bool PT>
CUresult cuStreamGetDevice_impl(CUstream s, CUdevice* dev) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.stream_identity(s, PT, nullptr, dev, nullptr); });
}
template <bool PT>
CUresult cuStreamGetCtx_impl(CUstream s, CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.stream_identity(s, PT, nullptr, nullptr, ctx); });
}
template <bool PT>
CUresult cuEventRecord_impl(CUevent e, CUstream s) {
  return with_model([&](Model& m) { return m.event_record(e, s, PT); });
}
template <bool PT>
CUresult cuEventRecordWithFlags_impl(CUevent e, CUstream s, unsigned flags) {
  if (flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.event_record(e, s, PT, flags); });
}
template <bool PT>
CUresult cuLaunchKernel_impl(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared_mem, CUstream s, void**, void**) {
  const simgpu::drv::KernelNodeParams k{f, {gx, gy, gz}, {bx, by, bz}, shared_mem};
  return with_model([&](Model& m) { return m.launch(k, s, PT); });
}
template <bool PT>
CUresult cuLaunchKernelEx_impl(const CUlaunchConfig* c, CUfunction f, void**, void**) {
  if (!c || (c->numAttrs && !c->attrs)) return CUDA_ERROR_INVALID_VALUE;
  simgpu::drv::KernelNodeParams k{
      f, {c->gridDimX, c->gridDimY, c->gridDimZ}, {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes};
  for (unsigned i = 0; i < c->numAttrs; ++i)
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) k.cooperative = c->attrs[i].value.cooperative != 0;
  return with_model([&](Model& m) { return m.launch(k, c->hStream, PT); });
}
template <bool PT>
CUresult cuLaunchCooperativeKernel_impl(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                        unsigned bz, unsigned shared_mem, CUstream s, void**) {
  const simgpu::drv::KernelNodeParams k{f, {gx, gy, gz}, {bx, by, bz}, shared_mem, true};
  return with_model([&](Model& m) { return m.launch(k, s, PT); });
}

}  // namespace

extern "C" {

// --- initialization and errors -------------------------------------------------

CUresult CUDAAPI cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = Model::init();
  if (r == CUDA_SUCCESS) simgpu::drv::inject_once();
  return r;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  const auto& node = simgpu::process_node();
  *version = node ? node->cuda_driver_version : 13000;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = simgpu::driver_error_name(error);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = simgpu::driver_error_string(error);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

namespace {  // simgpu's runtime declares its modules' variables here (simgpu_globals.h)

CUresult declare_global(CUmodule module, const char* name, size_t bytes, const void* initial) {
  return with_model([&](Model& m) { return m.module_declare_global(module, name, bytes, initial); });
}

const simgpu::GlobalsTable kGlobalsTable{sizeof(simgpu::GlobalsTable), declare_global};

}  // namespace

// The driver's private interface tables, which NVIDIA's own libraries (a
// statically linked cudart, cuBLAS, cuDNN, ...) call instead of the public
// API: undocumented, so simgpu cannot emulate them.  Refused with a line that
// tells the user why the program's next CUDA call fails.
CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid* id) {
  if (!table || !id) return CUDA_ERROR_INVALID_VALUE;
  // simgpu's own tables, for its simulated CUPTI (activity.hpp) and its
  // runtime (simgpu_globals.h).
  *table = simgpu::drv::activity_export_table(*id);
  if (*table == nullptr && std::memcmp(id->bytes, simgpu::kSimgpuGlobalsTableId.bytes, sizeof id->bytes) == 0)
    *table = &kGlobalsTable;
  if (*table != nullptr) return CUDA_SUCCESS;
  simgpu::explain_once("cuGetExportTable",
                       "cuGetExportTable is not supported: simgpu cannot emulate the driver's private interface "
                       "tables that NVIDIA's own libraries use (a statically linked cudart -- nvcc's default --, "
                       "cuBLAS, cuDNN); build with -cudart shared to run on simgpu (CUDA_ERROR_NOT_SUPPORTED)");
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuProfilerStart(void) { return with_model([](Model&) { return CUDA_SUCCESS; }); }
CUresult CUDAAPI cuProfilerStop(void) { return with_model([](Model&) { return CUDA_SUCCESS; }); }

// --- devices ----------------------------------------------------------------------

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    *count = m.device_count();
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    if (CUresult r = check_device(m, ordinal)) return r;
    *device = ordinal;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    if (CUresult r = check_device(m, dev)) return r;
    std::snprintf(name, static_cast<size_t>(len), "%s", m.desc(dev).name.c_str());
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    if (CUresult r = check_device(m, dev)) return r;
    *bytes = m.desc(dev).memory_bytes;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice dev) {
  if (!value || attr <= 0 || attr >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    if (CUresult r = check_device(m, dev)) return r;
    if (!described_attribute(m.desc(dev), attr, value)) *value = constant_attribute(attr);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    if (CUresult r = check_device(m, dev)) return r;
    parse_uuid(m.desc(dev).uuid, uuid);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

CUresult CUDAAPI cuDeviceGetPCIBusId(char* bus_id, int len, CUdevice dev) {
  if (!bus_id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    if (CUresult r = check_device(m, dev)) return r;
    const simgpu::DeviceDesc& d = m.desc(dev);
    std::snprintf(bus_id, static_cast<size_t>(len), "%04x:%02x:%02x.0", d.pci_domain, d.pci_bus, d.pci_device);
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice* dev, const char* bus_id) {
  if (!dev || !bus_id) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    unsigned domain = 0, bus = 0, device = 0;
    if (std::sscanf(bus_id, "%x:%x:%x", &domain, &bus, &device) != 3) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < m.device_count(); ++i) {
      const simgpu::DeviceDesc& d = m.desc(i);
      if (d.pci_domain == domain && d.pci_bus == bus && d.pci_device == device) {
        *dev = i;
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_DEVICE;
  });
}

// --- contexts ---------------------------------------------------------------------

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.primary_retain(dev, ctx); });
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return with_model([&](Model& m) { return m.primary_release(dev); });
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return with_model([&](Model& m) { return check_device(m, dev); });
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.primary_state(dev, flags, active); });
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return with_model([&](Model& m) { return m.primary_set_flags(dev, flags); });
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams*, unsigned int, CUdevice dev) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.ctx_create(dev, ctx); });
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  return with_model([&](Model& m) { return m.ctx_destroy(ctx); });
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  return with_model([&](Model& m) { return m.set_current(ctx); });
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model&) {
    *ctx = Model::current();
    return CUDA_SUCCESS;
  });
}

// simgpu keeps one current context per thread rather than a stack: push and
// pop swap it, which is all the runtime and single-context programs need.
CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) { return cuCtxSetCurrent(ctx); }

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* ctx) {
  return with_model([&](Model& m) {
    if (ctx) *ctx = Model::current();
    return m.set_current(nullptr);
  });
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* dev) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.current_device(dev); });
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* dev, CUcontext ctx) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  if (!ctx) return cuCtxGetDevice(dev);
  return with_model([&](Model& m) { return m.context_device(ctx, dev); });
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  return with_model([](Model& m) { return m.ctx_synchronize(nullptr); });
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  return with_model([&](Model& m) { return m.ctx_synchronize(ctx); });
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext, unsigned int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model&) {
    *version = 13000;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value) {
  return with_model([&](Model& m) { return m.ctx_limit(limit, &value, true); });
}

CUresult CUDAAPI cuCtxGetLimit(size_t* value, CUlimit limit) {
  return with_model([&](Model& m) { return m.ctx_limit(limit, value, false); });
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config) {
  return with_model([&](Model& m) { return m.ctx_cache_config(&config, true); });
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache* config) {
  return with_model([&](Model& m) { return m.ctx_cache_config(config, false); });
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long* id) {
  return with_model([&](Model& m) { return m.ctx_id(ctx, id); });
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) {
    int dev = 0;
    if (CUresult r = m.current_device(&dev)) return r;
    int active = 0;
    return m.primary_state(dev, flags, &active);
  });
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  return with_model([&](Model&) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return CUDA_SUCCESS;
  });
}

// --- streams and events -----------------------------------------------------------

CUresult CUDAAPI cuStreamCreate(CUstream* s, unsigned int flags) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.stream_create(flags, 0, s); });
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* s, unsigned int flags, int priority) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.stream_create(flags, priority, s); });
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream s) {
  return with_model([&](Model& m) { return m.stream_destroy(s); });
}

CUresult CUDAAPI cuEventCreate(CUevent* e, unsigned int flags) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.event_create(flags, e); });
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent e) {
  return with_model([&](Model& m) { return m.event_destroy(e); });
}

CUresult CUDAAPI cuEventQuery(CUevent e) {
  return with_model([&](Model& m) { return m.event_query(e); });
}

CUresult CUDAAPI cuEventSynchronize(CUevent e) {
  return with_model([&](Model& m) { return m.event_synchronize(e); });
}

CUresult CUDAAPI cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  return with_model([&](Model& m) { return m.event_elapsed(ms, start, end); });
}

CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}

// --- modules and launches ---------------------------------------------------------

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  if (!module) return CUDA_ERROR_INVALID_VALUE;
  return with_model([&](Model& m) { return m.module_load(image, module); });
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*, void**) {
  return cuModuleLoadData(module, image);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fat_cubin) {
  return cuModuleLoadData(module, fat_cubin);
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  return with_model([&](Model& m) { return m.module_unload(module); });
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  return with_model([&](Model& m) { return m.module_get_function(module, name, f); });
}

CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr* address, size_t* bytes, CUmodule module, const char* name) {
  return with_model([&](Model& m) { return m.module_get_global(module, name, address, bytes); });
}

CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction f) {
  return with_model([&](Model& m) { return m.function_name(f, name); });
}

}  // extern "C"

SIMGPU_DRIVER_DUAL(cuStreamQuery, _ptsz, (CUstream s), (s))
SIMGPU_DRIVER_DUAL(cuStreamSynchronize, _ptsz, (CUstream s), (s))
SIMGPU_DRIVER_DUAL(cuStreamWaitEvent, _ptsz, (CUstream s, CUevent e, unsigned int flags), (s, e, flags))
SIMGPU_DRIVER_DUAL(cuStreamGetFlags, _ptsz, (CUstream s, unsigned int* flags), (s, flags))
SIMGPU_DRIVER_DUAL(cuStreamGetPriority, _ptsz, (CUstream s, int* priority), (s, priority))
SIMGPU_DRIVER_DUAL(cuStreamGetId, _ptsz, (CUstream s, unsigned long long* id), (s, id))
SIMGPU_DRIVER_DUAL(cuStreamGetDevice, _ptsz, (CUstream s, CUdevice* dev), (s, dev))
SIMGPU_DRIVER_DUAL(cuStreamGetCtx, _ptsz, (CUstream s, CUcontext* ctx), (s, ctx))
SIMGPU_DRIVER_DUAL(cuEventRecord, _ptsz, (CUevent e, CUstream s), (e, s))
SIMGPU_DRIVER_DUAL(cuEventRecordWithFlags, _ptsz, (CUevent e, CUstream s, unsigned int flags), (e, s, flags))
SIMGPU_DRIVER_DUAL(cuLaunchKernel, _ptsz,
                   (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                    unsigned int by, unsigned int bz, unsigned int shared_mem, CUstream s, void** params,
                    void** extra),
                   (f, gx, gy, gz, bx, by, bz, shared_mem, s, params, extra))
SIMGPU_DRIVER_DUAL(cuLaunchCooperativeKernel, _ptsz,
                   (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                    unsigned int by, unsigned int bz, unsigned int shared_mem, CUstream s, void** params),
                   (f, gx, gy, gz, bx, by, bz, shared_mem, s, params))
SIMGPU_DRIVER_DUAL(cuLaunchKernelEx, _ptsz,
                   (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),
                   (config, f, params, extra))
