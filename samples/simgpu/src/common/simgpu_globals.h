// simgpu's module globals interface: how its runtime tells its driver about
// a module's __device__ and __constant__ variables. The driver does not
// parse compiled images (they may be compressed), so it cannot find a
// variable's size; the runtime has it from __cudaRegisterVar and declares
// each variable once per module, with its initial bytes. cuModuleGetGlobal
// then answers as on a real driver. Reached like the activity table,
// through cuGetExportTable, so libcuda.so.1 keeps exactly the real exports.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace simgpu {

struct GlobalsTable {
  size_t size;
  // Device memory of `bytes` for `name` in `module`, holding `initial`;
  // declaring a name again keeps the first.
  CUresult (*declare)(CUmodule module, const char* name, size_t bytes, const void* initial);
};

inline constexpr CUuuid kSimgpuGlobalsTableId = {
    {'s', 'i', 'm', 'g', 'p', 'u', '-', 'g', 'l', 'o', 'b', 'a', 'l', 's', '0', '1'}};

}  // namespace simgpu
