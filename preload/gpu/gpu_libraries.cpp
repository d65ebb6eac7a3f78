#include "gpu_libraries.h"

#include <cstring>

namespace gpuscope::gpu {
namespace {

// File-name prefixes. "libcuda." and not "libcuda": libcudart and libcudnn
// have their own rows, libcudadebugger none. "libnccl" covers its net plugins.
constexpr const char* kGpuLibraryPrefixes[] = {
    "libcuda.",  "libcudart.", "libcudart_",  "libcublas",  "libcudnn",      "libnvrtc",
    "libnvidia-ml.", "libnccl", "libcufft",    "libcusparse", "libcurand",  "libcusolver",
    "libnvJitLink", "libcupti.", "libnvToolsExt", "libnvtx3interop",
};

}  // namespace

bool is_gpu_library(const char* path) noexcept {
  if (path == nullptr) return false;
  const char* slash = std::strrchr(path, '/');
  const char* name = slash != nullptr ? slash + 1 : path;
  for (const char* prefix : kGpuLibraryPrefixes)
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

}  // namespace gpuscope::gpu
