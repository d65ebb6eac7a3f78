#include "node_probe.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/utsname.h>

#include <cstring>

#include <fmt/format.h>

namespace gpuscope::doctor {
namespace {

template <size_t N, class Fn, class... Args> std::string read_string(Fn fn, Args... args) {
  char buf[N] = {};
  if (fn == nullptr || fn(args..., buf, static_cast<unsigned>(N)) != nvml::kSuccess) return {};
  return std::string(buf, strnlen(buf, N));
}

// The MIG devices of a GPU in MIG mode, and its NVLinks (nvml_partitions.h).
void read_partitions_and_links(const nvml::Api& api, Gpu& gpu) {
  unsigned current = 0, pending = 0;
  if (api.device_get_mig_mode != nullptr && api.device_get_mig_mode(gpu.handle, &current, &pending) == nvml::kSuccess &&
      current == 1) {
    gpu.mig_enabled = true;
    nvml::list_mig_devices(api, gpu.handle, &gpu.mig_devices, &gpu.mig_not_listed);
  }
  nvml::read_nvlinks(api, gpu.handle, &gpu.nvlinks, &gpu.nvlink_not_read);
}

Gpu describe_gpu(const nvml::Api& api, unsigned index, nvml::Device handle) {
  Gpu gpu;
  gpu.index = index;
  gpu.handle = handle;
  gpu.name = read_string<96>(api.device_get_name, handle);
  gpu.uuid = read_string<96>(api.device_get_uuid, handle);
  nvml::PciInfo pci{};
  if (api.device_get_pci_info_v3 != nullptr && api.device_get_pci_info_v3(handle, &pci) == nvml::kSuccess)
    gpu.bus_id.assign(pci.bus_id, strnlen(pci.bus_id, sizeof pci.bus_id));
  read_partitions_and_links(api, gpu);
  return gpu;
}

void open_nvml(NodeProbe& probe) {
  probe.nvml_ok = nvml::open_nvml(probe.options.nvml_library, dlsym, &probe.api, &probe.nvml_status);
  if (!probe.nvml_ok) return;
  const nvml::Api& api = probe.api;
  probe.driver_version = read_string<96>(api.system_get_driver_version);
  unsigned count = 0;
  if (const nvml::Return r = api.device_get_count_v2(&count); r != nvml::kSuccess) {
    probe.nvml_ok = false;
    probe.nvml_status = "nvmlDeviceGetCount_v2 failed: " + nvml::describe_return(api, r);
    return;
  }
  for (unsigned i = 0; i < count; ++i) {
    nvml::Device handle = nullptr;
    if (const nvml::Return r = api.device_get_handle_by_index_v2(i, &handle); r == nvml::kSuccess)
      probe.gpus.push_back(describe_gpu(api, i, handle));
    else
      probe.unreachable_gpus.push_back("GPU " + std::to_string(i) + ": " + nvml::describe_return(api, r));
  }
}

std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name)
    return map->l_name;
  return fallback;
}

// Loads the first CUDA runtime the library path offers and asks it for its
// own version and the driver's (0 when no driver is installed). Neither call
// initializes CUDA or creates a context.
void probe_cudart(NodeProbe& probe) {
  CudaRuntime& rt = probe.cudart;
  void* handle = nullptr;
  std::string tried;
  for (const std::string& name : probe.options.cudart_libraries) {
    handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);  // kept loaded: the process ends soon
    if (handle != nullptr) {
      rt.path = loaded_path(handle, name);
      break;
    }
    tried += (tried.empty() ? "" : ", ") + name;
  }
  if (handle == nullptr) {
    rt.error = "no CUDA runtime on the library path (tried " + tried + ")";
    return;
  }
  using GetVersion = int (*)(int*);
  auto runtime_version = reinterpret_cast<GetVersion>(dlsym(handle, "cudaRuntimeGetVersion"));
  auto driver_version = reinterpret_cast<GetVersion>(dlsym(handle, "cudaDriverGetVersion"));
  if (runtime_version == nullptr || driver_version == nullptr) {
    rt.error = rt.path + " has no cudaRuntimeGetVersion or cudaDriverGetVersion";
    return;
  }
  if (const int r = runtime_version(&rt.runtime_version); r != 0)
    rt.error = "cudaRuntimeGetVersion returned " + std::to_string(r);
  else if (const int d = driver_version(&rt.driver_version); d != 0)
    rt.error = "cudaDriverGetVersion returned " + std::to_string(d);
}

const char* enabled_text(bool on) { return on ? "enabled" : "disabled"; }

// The MIG devices by profile ("1g.18gb x2, 3g.71gb"); "" when MIG is off or
// they could not be listed, "none" when MIG is on without any.
std::string mig_layout(const Gpu& gpu) {
  return gpu.mig_enabled && gpu.mig_not_listed.empty() ? nvml::mig_layout(gpu.mig_devices) : "";
}

// One GPU's facts (node_facts.h): each query NVML answers, in fact_rules() order.
GpuFacts gpu_facts(const nvml::Api& api, const Gpu& gpu) {
  GpuFacts g{gpu.index, {}};
  const auto add = [&](const char* name, std::string value) {
    if (!value.empty()) g.facts.emplace_back(name, std::move(value));
  };
  const nvml::Device d = gpu.handle;
  const auto query = [](auto fn, auto... args) { return fn != nullptr && fn(args...) == nvml::kSuccess; };
  add("name", gpu.name);
  add("uuid", gpu.uuid);
  add("bus_id", gpu.bus_id);
  add("vbios", read_string<64>(api.device_get_vbios_version, d));
  if (nvml::Memory m{}; query(api.device_get_memory_info, d, &m)) add("memory", fmt::format("{} MiB", m.total >> 20));
  if (unsigned gen = 0, width = 0; query(api.device_get_max_pcie_link_generation, d, &gen) &&
                                   query(api.device_get_max_pcie_link_width, d, &width))
    add("pcie_link_max", fmt::format("Gen{} x{}", gen, width));
  if (unsigned mode = 0, pending = 0; query(api.device_get_mig_mode, d, &mode, &pending))
    add("mig_mode", enabled_text(mode == 1));
  add("mig_devices", mig_layout(gpu));
  if (!gpu.nvlinks.empty())
    add("nvlinks_active", fmt::format("{} of {}", nvml::active_links(gpu.nvlinks), gpu.nvlinks.size()));
  if (int mode = 0; query(api.device_get_persistence_mode, d, &mode)) add("persistence_mode", enabled_text(mode == 1));
  if (unsigned mw = 0; query(api.device_get_enforced_power_limit, d, &mw)) add("power_limit", fmt::format("{} W", mw / 1000));
  if (unsigned sm = 0, mem = 0; query(api.device_get_applications_clock, d, nvml::kClockSm, &sm) &&
                                query(api.device_get_applications_clock, d, nvml::kClockMem, &mem))
    add("applications_clocks", fmt::format("SM {} MHz, memory {} MHz", sm, mem));
  if (unsigned sm = 0, mem = 0; query(api.device_get_max_clock_info, d, nvml::kClockSm, &sm) &&
                                query(api.device_get_max_clock_info, d, nvml::kClockMem, &mem))
    add("max_clocks", fmt::format("SM {} MHz, memory {} MHz", sm, mem));
  return g;
}

NodeFacts collect_facts(const NodeProbe& probe) {
  NodeFacts facts;
  const auto add = [&](const char* name, std::string value) {
    if (!value.empty()) facts.node.emplace_back(name, std::move(value));
  };
  if (utsname u{}; uname(&u) == 0) add("kernel", u.release);
  add("driver", probe.driver_version);
  int cuda_driver = probe.cudart.driver_version;
  if (probe.nvml_ok && probe.api.system_get_cuda_driver_version_v2 != nullptr)
    probe.api.system_get_cuda_driver_version_v2(&cuda_driver);
  if (cuda_driver > 0) add("cuda_driver", cuda_version_text(cuda_driver));
  if (probe.cudart.runtime_version > 0) add("cuda_runtime", cuda_version_text(probe.cudart.runtime_version));
  add("cuda_runtime_library", probe.cudart.path);
  if (probe.nvml_ok) add("gpu_count", std::to_string(probe.gpus.size() + probe.unreachable_gpus.size()));
  for (const Gpu& gpu : probe.gpus) facts.gpus.push_back(gpu_facts(probe.api, gpu));
  return facts;
}

}  // namespace

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

Finding NvmlReads::not_checked() const {
  Finding f;
  f.state = CheckState::NotChecked;
  f.summary = failed_ + ": " + nvml::describe_return(probe_.api, result_);
  return f;
}

NodeProbe probe_node(const DoctorOptions& options) {
  NodeProbe probe;
  probe.options = options;
  open_nvml(probe);
  probe_cudart(probe);
  probe.facts = collect_facts(probe);
  return probe;
}

}  // namespace gpuscope::doctor
