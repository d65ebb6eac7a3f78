// The node-wide checks: is there a driver, which GPUs can this process
// reach, and does the CUDA runtime on the library path fit the driver.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checks.h"

namespace gpuscope::doctor {
namespace {

std::string describe(const Gpu& gpu) {
  return fmt::format("GPU {}: {} ({}, {})", gpu.index, gpu.name, gpu.bus_id, gpu.uuid);
}

const Gpu* named_gpu(const std::vector<Gpu>& gpus, const std::string& entry) {
  if (entry.empty()) return nullptr;
  if (entry.find_first_not_of("0123456789") == std::string::npos) {
    const unsigned long index = std::strtoul(entry.c_str(), nullptr, 10);
    return index < gpus.size() ? &gpus[index] : nullptr;
  }
  for (const Gpu& gpu : gpus)
    if (entry.size() > 4 && gpu.uuid.compare(0, entry.size(), entry) == 0) return &gpu;
  return nullptr;
}

}  // namespace

VisibleDevices visible_devices(const std::vector<Gpu>& gpus) {
  VisibleDevices v;
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  if (value == nullptr) {
    for (const Gpu& gpu : gpus) v.gpus.push_back(&gpu);
    return v;
  }
  v.restricted = true;
  v.value = value;
  size_t start = 0;
  while (start <= v.value.size()) {
    size_t end = v.value.find(',', start);
    if (end == std::string::npos) end = v.value.size();
    const std::string entry = v.value.substr(start, end - start);
    const Gpu* gpu = named_gpu(gpus, entry);
    if (entry.compare(0, 4, "MIG-") == 0) {
      v.mig_instances.push_back(entry);
    } else if (gpu == nullptr) {
      v.first_invalid = entry;
      break;
    } else {
      v.gpus.push_back(gpu);
    }
    start = end + 1;
  }
  return v;
}

namespace {

// "" when usable, else what is wrong with the device node. The node is
// opened as CUDA opens it: a container's device cgroup (its allowlist, an
// eBPF program under cgroup v2) refuses at open(), whatever the file's mode
// says, and nothing short of opening shows that.
std::string node_problem(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return path + " is missing";
  if (access(path.c_str(), R_OK | W_OK) != 0) return path + " is not readable and writable by this user";
  const int fd = open(path.c_str(), O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return fmt::format("{} cannot be opened although its mode allows it ({}){}", path, std::strerror(errno),
                       errno == EPERM ? ": the container's device cgroup does not allow it" : "");
  close(fd);
  return "";
}

std::vector<std::string> device_node_problems(const NodeProbe& probe, const std::vector<const Gpu*>& visible) {
  std::vector<std::string> paths = {probe.options.dev_dir + "/nvidiactl", probe.options.dev_dir + "/nvidia-uvm"};
  for (const Gpu* gpu : visible) {
    unsigned minor = gpu->index;
    if (probe.api.device_get_minor_number != nullptr) probe.api.device_get_minor_number(gpu->handle, &minor);
    paths.push_back(fmt::format("{}/nvidia{}", probe.options.dev_dir, minor));
  }
  std::vector<std::string> problems;
  for (const std::string& path : paths)
    if (std::string p = node_problem(path); !p.empty()) problems.push_back(std::move(p));
  return problems;
}

}  // namespace

Finding check_driver(const NodeProbe& probe) {
  if (!probe.nvml_ok) {
    Finding f = failed("no usable NVIDIA driver: " + probe.nvml_status,
                       "install the NVIDIA driver; in a container, start it with the NVIDIA container runtime "
                       "(--gpus all, or runtimeClassName: nvidia) so that libnvidia-ml.so.1 and libcuda.so.1 are "
                       "mounted");
    if (!probe.cudart.path.empty() && probe.cudart.error.empty())
      f.evidence.push_back(fmt::format("the CUDA runtime {} ({}) reports driver version {}",
                                       cuda_version_text(probe.cudart.runtime_version), probe.cudart.path,
                                       probe.cudart.driver_version));
    return f;
  }
  if (!probe.unreachable_gpus.empty()) {
    Finding f = failed(fmt::format("driver {} counts {} GPUs but cannot open {}: {}", probe.driver_version,
                                   probe.gpus.size() + probe.unreachable_gpus.size(), probe.unreachable_gpus.size(),
                                   probe.unreachable_gpus.front()),
                       "a GPU that is lost has fallen off the bus (Xid 79 in the kernel log): drain the node, reset "
                       "the GPU or reboot, and replace it if it happens again");
    f.evidence = probe.unreachable_gpus;
    return f;
  }
  if (probe.gpus.empty())
    return failed(fmt::format("driver {} is loaded but sees no GPU", probe.driver_version),
                  "check that the GPU is seated and powered (lspci -d 10de:) and read the kernel log for NVRM "
                  "errors");
  Finding f = passed(fmt::format("driver {}, NVML sees {} GPU{}", probe.driver_version, probe.gpus.size(),
                                 probe.gpus.size() == 1 ? "" : "s"));
  for (const Gpu& gpu : probe.gpus) f.evidence.push_back(describe(gpu));
  return f;
}

Finding check_devices(const NodeProbe& probe) {
  const VisibleDevices visible = visible_devices(probe.gpus);
  const std::string setting = visible.restricted ? "CUDA_VISIBLE_DEVICES=" + visible.value : "CUDA_VISIBLE_DEVICES unset";
  const std::vector<std::string> problems = device_node_problems(probe, visible.gpus);
  Finding f = passed(fmt::format("{} of {} GPUs visible to CUDA ({}); their device nodes are usable",
                                 visible.gpus.size(), probe.gpus.size(), setting));
  if (!visible.first_invalid.empty())
    f = warned(fmt::format("CUDA_VISIBLE_DEVICES entry '{}' names no GPU: CUDA ignores it and every entry after it",
                           visible.first_invalid),
               "list GPU indices (0..N-1) or UUIDs (nvidia-smi -L) in CUDA_VISIBLE_DEVICES");
  if (visible.gpus.empty() && visible.mig_instances.empty() && !probe.gpus.empty())
    f = failed(fmt::format("no GPU is visible to CUDA: {} hides all {}", setting, probe.gpus.size()),
               "unset CUDA_VISIBLE_DEVICES or list the GPUs this process should use");
  if (!visible.mig_instances.empty() && visible.gpus.empty()) {
    // Worse, not instead: an entry after the MIG ones that names nothing still warns.
    const MigLanding landing = mig_landing(probe);
    f = worse(landing.gpu == nullptr
                  ? failed(landing.why + ": CUDA sees no device",
                           "list MIG devices by the UUIDs nvidia-smi -L prints (MIG-...) in CUDA_VISIBLE_DEVICES")
                  : passed(fmt::format("MIG device {} of GPU {} visible to CUDA ({})", landing.slice->uuid,
                                       landing.gpu->index, setting)),
              f);
  }
  if (!problems.empty())
    f = worse(failed(problems.front() + (problems.size() > 1 ? fmt::format(" (and {} more)", problems.size() - 1) : ""),
                     "load the driver's device nodes (nvidia-modprobe, nvidia-uvm); in a container, pass the "
                     "devices through (the NVIDIA container runtime does) and check the cgroup device rules"),
              f);
  f.evidence.push_back(setting);
  for (const std::string& p : problems) f.evidence.push_back(p);
  for (const Gpu* gpu : visible.gpus) f.evidence.push_back("visible: " + describe(*gpu));
  for (const std::string& mig : visible.mig_instances) f.evidence.push_back("visible: MIG instance " + mig);
  return f;
}

Finding check_cuda_runtime(const NodeProbe& probe) {
  const CudaRuntime& rt = probe.cudart;
  if (rt.path.empty() || !rt.error.empty()) return not_checked(rt.path.empty() ? rt.error : rt.path + ": " + rt.error);
  const std::string runtime = fmt::format("CUDA runtime {} ({})", cuda_version_text(rt.runtime_version), rt.path);
  Finding f;
  if (rt.driver_version == 0) {
    f = failed(runtime + " finds no driver: CUDA calls fail with cudaErrorInsufficientDriver (35), and frameworks "
                         "fall back to the CPU",
               "install the NVIDIA driver, or run the container with the NVIDIA container runtime");
  } else if (rt.driver_version >= rt.runtime_version) {
    f = passed(fmt::format("{} on a driver that supports CUDA {}", runtime, cuda_version_text(rt.driver_version)));
  } else if (rt.driver_version / 1000 == rt.runtime_version / 1000) {
    f = warned(fmt::format("the driver supports CUDA {}, older than the {}: it runs through minor version "
                           "compatibility, but features newer than the driver fail and PTX newer than it does "
                           "not JIT",
                           cuda_version_text(rt.driver_version), runtime),
               "upgrade the driver to one that supports the runtime's CUDA version");
  } else {
    f = failed(fmt::format("the driver supports CUDA {}, a major version older than the {}: CUDA calls fail with "
                           "cudaErrorInsufficientDriver (35)",
                           cuda_version_text(rt.driver_version), runtime),
               "upgrade the driver, or install the CUDA forward compatibility package (cuda-compat) on a "
               "data-center GPU, or use a runtime no newer than the driver");
  }
  f.evidence.push_back(fmt::format("cudaRuntimeGetVersion: {}, cudaDriverGetVersion: {}", rt.runtime_version,
                                   rt.driver_version));
  if (!probe.driver_version.empty()) f.evidence.push_back("NVML driver version " + probe.driver_version);
  return f;
}

}  // namespace gpuscope::doctor
