// A definition for every symbol of the real driver's ABI.  Each is weak: the
// entry points simgpu implements (driver_api.cpp, driver_memory_api.cpp)
// replace them at link time; the rest answer CUDA_ERROR_NOT_SUPPORTED, so a
// program or profiler that calls something simgpu does not model gets a CUDA
// error, never a crash or a missing symbol.
//
// Deliberately no cuda.h here: the stubs take no parameters (the System V
// ABI lets a callee ignore its arguments) and typed declarations would clash.

#include "errors.hpp"
#include "driver_exports.hpp"

namespace {

constexpr int kCudaErrorNotSupported = 801;

// SIMGPU_LOG=1 names each unsupported entry point once on stderr.
int unsupported(const char* name) {
  simgpu::log_unsupported_once(name, "CUDA_ERROR_NOT_SUPPORTED");
  return kCudaErrorNotSupported;
}

}  // namespace

#define SIMGPU_DRIVER_EXPORT(symbol, base, version, per_thread) \
  extern "C" __attribute__((weak)) int symbol() { return unsupported(#symbol); }
#include "driver_exports.def"
#undef SIMGPU_DRIVER_EXPORT

namespace simgpu::drv {

const DriverExport* driver_exports(size_t* count) {
  // &symbol resolves, at link time, to the implementation when there is one.
  static const DriverExport table[] = {
#define SIMGPU_DRIVER_EXPORT(symbol, base, version, per_thread) \
  {#symbol, #base, version, per_thread != 0, reinterpret_cast<void*>(&symbol)},
#include "driver_exports.def"
#undef SIMGPU_DRIVER_EXPORT
  };
  *count = sizeof table / sizeof table[0];
  return table;
}

}  // namespace simgpu::drv
