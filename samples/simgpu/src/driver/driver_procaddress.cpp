// cuGetProcAddress: how the CUDA runtime (and PyTorch, and gpuscope's driver
// hooks) find driver entry points.  A request names a base function and a
// CUDA version; the answer is the newest variant of that function introduced
// at or before the version, the per-thread default stream variant when the
// caller asks for one and it exists.
#include <cstring>

#include <cuda.h>

#include "driver_exports.hpp"

// cuda.h renames cuGetProcAddress to its _v2; the original is exported too.
#undef cuGetProcAddress
extern "C" CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags);

namespace {

using simgpu::drv::DriverExport;

const DriverExport* newest(const char* base, int version, bool per_thread, bool* base_known) {
  size_t count = 0;
  const DriverExport* table = simgpu::drv::driver_exports(&count);
  const DriverExport* best = nullptr;
  for (size_t i = 0; i < count; ++i) {
    const DriverExport& e = table[i];
    if (e.per_thread != per_thread || std::strcmp(e.base, base) != 0) continue;
    *base_known = true;
    if (e.version <= version && (!best || e.version > best->version)) best = &e;
  }
  return best;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn || flags > CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  bool known = false;
  const DriverExport* hit = newest(symbol, version, false, &known);
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
    // The per-thread twin of the chosen variant is at least as new as it.
    const DriverExport* twin = newest(symbol, version, true, &known);
    if (twin && (!hit || twin->version >= hit->version)) hit = twin;
  }
  if (!hit) {
    if (status) *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = hit->function;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

// The CUDA 11.3 form, without the status out-parameter.
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

}  // extern "C"
