// A definition for every symbol the real libcudart.so.13 exports.  Each is
// weak: the entry points simgpu implements replace them at link time; the
// rest answer cudaErrorNotSupported (and make it the thread's last error), so
// a program that calls something simgpu does not model gets a CUDA error,
// never a crash or an unresolved symbol.
//
// No CUDA API headers here: the stubs take no parameters (the System V ABI lets a
// callee ignore its arguments) and typed declarations would clash.

#include <driver_types.h>  // types only, no function declarations

#include "errors.hpp"

namespace simgpu::rt {
cudaError_t record(cudaError_t e);  // driver_link.cpp
}

namespace {

cudaError_t unsupported(const char* name) {
  simgpu::log_unsupported_once(name, "cudaErrorNotSupported");
  return simgpu::rt::record(cudaErrorNotSupported);
}

}  // namespace

#define SIMGPU_RUNTIME_EXPORT(symbol) \
  extern "C" __attribute__((weak)) int symbol() { return unsupported(#symbol); }
#include "runtime_exports.def"
#undef SIMGPU_RUNTIME_EXPORT
