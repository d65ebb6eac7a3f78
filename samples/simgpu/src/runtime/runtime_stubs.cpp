// A definition for every symbol the real libcudart.so.13 exports.  Each is
// weak: the entry points simgpu implements replace them at link time; the
// rest answer cudaErrorNotSupported (and make it the thread's last error), so
// a program that calls something simgpu does not model gets a CUDA error,
// never a crash or an unresolved symbol.
//
// No CUDA API headers here: the stubs take no parameters (the System V ABI lets a
// callee ignore its arguments) and typed declarations would clash.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include <driver_types.h>  // types only, no function declarations

namespace simgpu::rt {
cudaError_t record(cudaError_t e);  // driver_link.cpp
}

namespace {

cudaError_t unsupported(const char* name) {
  static const bool log = [] {
    const char* v = std::getenv("SIMGPU_LOG");
    return v && *v && *v != '0';
  }();
  if (log) {
    static std::mutex mu;
    static std::set<std::string> seen;
    std::lock_guard lock(mu);
    if (seen.insert(name).second)
      std::fprintf(stderr, "simgpu: %s is not supported by simgpu (cudaErrorNotSupported)\n", name);
  }
  return simgpu::rt::record(cudaErrorNotSupported);
}

}  // namespace

#define SIMGPU_RUNTIME_EXPORT(symbol) \
  extern "C" __attribute__((weak)) int symbol() { return unsupported(#symbol); }
#include "runtime_exports.def"
#undef SIMGPU_RUNTIME_EXPORT
