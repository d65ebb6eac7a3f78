#include "environment_probe.h"

#include <dlfcn.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "real_symbol.h"

namespace gpuscope::gpu {
namespace {

container::DeviceNodeState node_state(const std::string& path) {
  container::DeviceNodeState s;
  s.path = path;
  struct stat st{};
  s.exists = stat(path.c_str(), &st) == 0;
  s.readable = s.exists && access(path.c_str(), R_OK) == 0;
  s.writable = s.exists && access(path.c_str(), W_OK) == 0;
  return s;
}

bool is_numbered_gpu_node(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  return name.size() > 6 && name.compare(0, 6, "nvidia") == 0 &&
         std::all_of(name.begin() + 6, name.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

std::vector<container::DeviceNodeState> probe_device_nodes(const std::string& dev_dir) {
  std::vector<std::string> paths;
  glob_t g{};
  if (glob((dev_dir + "/nvidia*").c_str(), GLOB_NOSORT, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  // The nodes CUDA cannot work without are listed even when missing.
  for (const char* required : {"nvidiactl", "nvidia-uvm"}) paths.push_back(dev_dir + "/" + required);
  if (std::none_of(paths.begin(), paths.end(), is_numbered_gpu_node)) paths.push_back(dev_dir + "/nvidia0");
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  std::vector<container::DeviceNodeState> nodes;
  nodes.reserve(paths.size());
  for (const auto& p : paths) nodes.push_back(node_state(p));
  return nodes;
}

void probe_driver(const std::string& library, container::EnvironmentProbeData& probe) {
  void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);  // never closed
  if (handle == nullptr) {
    const char* why = dlerror();
    probe.driver_error = why != nullptr ? why : library + " could not be loaded";
    return;
  }
  probe.driver_loaded = true;
  using DriverGetVersion = int (*)(int*);
  const capture::DlsymFn lookup = capture::real_dlsym();  // not the dlsym override
  auto get_version =
      reinterpret_cast<DriverGetVersion>(lookup != nullptr ? lookup(handle, "cuDriverGetVersion") : nullptr);
  if (get_version == nullptr) {
    probe.driver_error = library + " has no cuDriverGetVersion";
    return;
  }
  int version = 0;
  const int result = get_version(&version);
  if (result == 0) {
    probe.driver_version = version;
  } else {
    // 34 is CUDA_ERROR_STUB_LIBRARY: the toolkit's stub, not a driver.
    probe.driver_error = "cuDriverGetVersion returned " + std::to_string(result) +
                         (result == 34 ? " (CUDA_ERROR_STUB_LIBRARY: the toolkit's stub, not a driver)" : "");
  }
}

}  // namespace gpuscope::gpu
