// A process with three CUDA runtimes: its own (libcudart.so.13), a runtime
// it opens and looks a function up in, and plugins built against others,
// each loaded RTLD_LOCAL (test_interception.cpp). Every caller must reach
// the runtime it was built against, traced or not.
//
//   two_runtimes_host RUNTIME PLUGIN...
//     RUNTIME: a libcudart to dlopen and call cudaRuntimeGetVersion in,
//     through dlsym; PLUGIN: a library exporting plugin_report().
#include <dlfcn.h>

#include <cstdio>

#include <cuda_runtime_api.h>

namespace {

void* open_or_say(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) std::printf("cannot open %s: %s\n", path, dlerror());
  return handle;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  // Looked up first, before the program's own runtime was called.
  if (void* runtime = open_or_say(argv[1])) {
    using VersionFn = int (*)(int*);
    const auto looked_up = reinterpret_cast<VersionFn>(dlsym(runtime, "cudaRuntimeGetVersion"));
    int version = -1;
    const int rc = looked_up != nullptr ? looked_up(&version) : -1;
    std::printf("looked up in %s: runtime %d (result %d)\n", argv[1], version, rc);
  }
  int version = -1;
  const int rc = cudaRuntimeGetVersion(&version);
  std::printf("program built for CUDA 13: runtime %d (result %d)\n", version, static_cast<int>(rc));
  for (int i = 2; i < argc; ++i) {
    void* plugin = open_or_say(argv[i]);
    if (plugin == nullptr) continue;
    if (auto* report = reinterpret_cast<void (*)()>(dlsym(plugin, "plugin_report"))) report();
  }
  return 0;
}
