// cublas_plugin: a program that knows nothing of CUDA and loads a plugin
// that does: it dlopens lib<its own name>_gemm.so from its own directory (a
// library linking cuBLAS and the CUDA runtime) and runs the plugin's SGEMM,
// as applications with optional GPU back ends do.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <string>

#include "conformance.h"

int main(int argc, char** argv) {
  sample::name() = "cublas_plugin";
  const sample::Flags flags(argc, argv, {"n="}, "[--n=N]");
  char self[PATH_MAX] = {};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0) return EXIT_FAILURE;
  std::string path = self;
  const size_t slash = path.rfind('/');
  path = path.substr(0, slash + 1) + "lib" + path.substr(slash + 1) + "_gemm.so";

  void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "cublas_plugin: cannot load the GPU plugin: %s\n", dlerror());
    return EXIT_FAILURE;
  }
  std::printf("[cublas_plugin] loaded the GPU plugin\n");
  std::fflush(stdout);
  using Gemm = int (*)(int);
  const auto gemm = reinterpret_cast<Gemm>(dlsym(plugin, "conformance_gemm"));
  if (gemm == nullptr) {
    std::fprintf(stderr, "cublas_plugin: the plugin has no conformance_gemm: %s\n", dlerror());
    return EXIT_FAILURE;
  }
  return gemm(static_cast<int>(flags.get("n", 256)));
}
