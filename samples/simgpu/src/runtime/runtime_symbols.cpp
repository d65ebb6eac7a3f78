// __device__ and __constant__ variables: nvcc's startup code registers each
// (__cudaRegisterVar: its host shadow, its name in the module, its size);
// cudaMemcpyToSymbol / FromSymbol (+Async), cudaGetSymbolAddress and
// cudaGetSymbolSize find it in the current device's module with
// cuModuleGetGlobal, as the real runtime does. simgpu's driver does not
// parse compiled images, so the runtime first declares the variable to it
// (simgpu_globals.h) with its initial bytes: the host shadow's contents at
// registration, which nvcc initializes as the device copy.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../common/simgpu_globals.h"
#include "runtime.hpp"

using simgpu::rt::DriverTable;
using simgpu::rt::from_driver;
using simgpu::rt::with_driver;
using simgpu::rt::valid_kind;

namespace {

struct Variable {
  void** binary;
  std::string name;
  size_t size;
  std::vector<unsigned char> initial;
};

struct Variables {
  std::mutex mu;
  std::map<const void*, Variable> by_host_shadow;
};

// Never destroyed, as the kernel registry (runtime_launch.cpp).
Variables& variables() {
  static Variables* v = new Variables;
  return *v;
}

const simgpu::GlobalsTable* globals_table(const DriverTable& d) {
  const void* table = nullptr;
  if (d.cuGetExportTable(&table, &simgpu::kSimgpuGlobalsTableId) != CUDA_SUCCESS) return nullptr;
  return static_cast<const simgpu::GlobalsTable*>(table);
}

// The device address and size of a registered variable on the current device.
cudaError_t symbol_address(const DriverTable& d, const void* symbol, CUdeviceptr* address, size_t* size) {
  Variable v;
  {
    Variables& all = variables();
    std::lock_guard lock(all.mu);
    const auto it = all.by_host_shadow.find(symbol);
    if (it == all.by_host_shadow.end()) return cudaErrorInvalidSymbol;
    v = it->second;
  }
  CUmodule module = nullptr;
  if (cudaError_t e = simgpu::rt::module_of(d, v.binary, &module)) return e;
  CUresult r = d.cuModuleGetGlobal(address, size, module, v.name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    const simgpu::GlobalsTable* table = globals_table(d);
    if (!table) return cudaErrorInvalidSymbol;
    if (CUresult declared = table->declare(module, v.name.c_str(), v.size, v.initial.data())) return from_driver(declared);
    r = d.cuModuleGetGlobal(address, size, module, v.name.c_str());
  }
  return r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidSymbol : from_driver(r);
}

// n bytes between the variable at `offset` and `other`, in the direction the
// kind gives (to the symbol: host or device to it; from: it to host or device).
cudaError_t symbol_copy(bool per_thread, const void* symbol, void* other, size_t n, size_t offset,
                        cudaMemcpyKind kind, bool to_symbol, cudaStream_t s, bool async) {
  return with_driver(per_thread, [&](const DriverTable& d) -> cudaError_t {
    if (!valid_kind(kind) || kind == cudaMemcpyHostToHost) return cudaErrorInvalidMemcpyDirection;
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cudaError_t e = symbol_address(d, symbol, &base, &size)) return e;
    if (offset > size || n > size - offset) return cudaErrorInvalidValue;
    const CUdeviceptr at = base + offset, ptr = simgpu::rt::dptr(other);
    if (kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault) {
      const CUdeviceptr dst = to_symbol ? at : ptr, src = to_symbol ? ptr : at;
      const bool unified = kind == cudaMemcpyDefault;
      if (async) return from_driver(unified ? d.cuMemcpyAsync(dst, src, n, s) : d.cuMemcpyDtoDAsync(dst, src, n, s));
      return from_driver(unified ? d.cuMemcpy(dst, src, n) : d.cuMemcpyDtoD(dst, src, n));
    }
    if (to_symbol != (kind == cudaMemcpyHostToDevice)) return cudaErrorInvalidMemcpyDirection;
    if (to_symbol) return from_driver(async ? d.cuMemcpyHtoDAsync(at, other, n, s) : d.cuMemcpyHtoD(at, other, n));
    return from_driver(async ? d.cuMemcpyDtoHAsync(other, at, n, s) : d.cuMemcpyDtoH(other, at, n));
  });
}

template <bool PT>
cudaError_t cudaMemcpyToSymbol_impl(const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind k) {
  return symbol_copy(PT, symbol, const_cast<void*>(src), n, offset, k, true, nullptr, false);
}
template <bool PT>
cudaError_t cudaMemcpyFromSymbol_impl(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind k) {
  return symbol_copy(PT, symbol, dst, n, offset, k, false, nullptr, false);
}
template <bool PT>
cudaError_t cudaMemcpyToSymbolAsync_impl(const void* symbol, const void* src, size_t n, size_t offset,
                                         cudaMemcpyKind k, cudaStream_t s) {
  return symbol_copy(PT, symbol, const_cast<void*>(src), n, offset, k, true, s, true);
}
template <bool PT>
cudaError_t cudaMemcpyFromSymbolAsync_impl(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind k,
                                           cudaStream_t s) {
  return symbol_copy(PT, symbol, dst, n, offset, k, false, s, true);
}

}  // namespace

extern "C" {

void CUDARTAPI __cudaRegisterVar(void** handle, char* host_shadow, char*, const char* device_name, int, size_t size,
                                 int, int) {
  if (!host_shadow || !device_name) return;
  const auto* bytes = reinterpret_cast<const unsigned char*>(host_shadow);
  Variables& all = variables();
  std::lock_guard lock(all.mu);
  all.by_host_shadow[host_shadow] = Variable{handle, device_name, size, std::vector<unsigned char>(bytes, bytes + size)};
}

cudaError_t CUDARTAPI cudaGetSymbolAddress(void** address, const void* symbol) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!address) return cudaErrorInvalidValue;
    CUdeviceptr at = 0;
    const cudaError_t e = symbol_address(d, symbol, &at, nullptr);
    *address = reinterpret_cast<void*>(at);
    return e;
  });
}

cudaError_t CUDARTAPI cudaGetSymbolSize(size_t* size, const void* symbol) {
  return with_driver(false, [&](const DriverTable& d) -> cudaError_t {
    if (!size) return cudaErrorInvalidValue;
    CUdeviceptr at = 0;
    return symbol_address(d, symbol, &at, size);
  });
}

}  // extern "C"

SIMGPU_RUNTIME_DUAL(cudaMemcpyToSymbol, _ptds,
                    (const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind k),
                    (symbol, src, n, offset, k))
SIMGPU_RUNTIME_DUAL(cudaMemcpyFromSymbol, _ptds,
                    (void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind k),
                    (dst, symbol, n, offset, k))
SIMGPU_RUNTIME_DUAL(cudaMemcpyToSymbolAsync, _ptsz,
                    (const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind k, cudaStream_t s),
                    (symbol, src, n, offset, k, s))
SIMGPU_RUNTIME_DUAL(cudaMemcpyFromSymbolAsync, _ptsz,
                    (void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind k, cudaStream_t s),
                    (dst, symbol, n, offset, k, s))
