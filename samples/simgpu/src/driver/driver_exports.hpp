// The table of every symbol the real libcuda.so.1 exports (driver_exports.def)
// with the function simgpu binds to it: the implementation where simgpu
// models the call, otherwise a stub answering CUDA_ERROR_NOT_SUPPORTED.
#pragma once

#include <cstddef>

namespace simgpu::drv {

struct DriverExport {
  const char* symbol;  // exported name, e.g. "cuMemAlloc_v2"
  const char* base;    // name cuGetProcAddress is asked for, e.g. "cuMemAlloc"
  int version;         // CUDA version that introduced this variant
  bool per_thread;     // the _ptsz/_ptds variant
  void* function;
};

const DriverExport* driver_exports(size_t* count);

}  // namespace simgpu::drv
