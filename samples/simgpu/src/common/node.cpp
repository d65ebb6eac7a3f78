#include "node.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace simgpu {
namespace {

using nlohmann::json;

template <class T>
T get(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// PCI ids read better in hex, so "0x233510DE" and 590680286 both work.
unsigned get_hex(const json& j, const char* key, unsigned fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_string()) return static_cast<unsigned>(std::stoul(it->get<std::string>(), nullptr, 0));
  return it->get<unsigned>();
}

// Bus numbers of the GPUs of an 8-GPU HGX board, so multi-device nodes look familiar.
constexpr unsigned kBusNumbers[] = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB};

// Payload GB/s of one lane per PCIe generation (after line encoding).
double lane_gbps(int gen) {
  static constexpr double rate[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
  return gen >= 1 && gen <= 6 ? rate[gen] : 0.25;
}

void parse_pcie(const json& j, DeviceDesc& d, double pageable_factor) {
  const json p = get(j, "pcie", json::object());
  d.pcie.gen_current = get(p, "gen_current", d.pcie.gen_current);
  d.pcie.width_current = get(p, "width_current", d.pcie.width_current);
  d.pcie.gen_max = get(p, "gen_max", d.pcie.gen_max);
  d.pcie.width_max = get(p, "width_max", d.pcie.width_max);
  d.pcie.efficiency = get(p, "efficiency", d.pcie.efficiency);
  d.pcie.replays = get(p, "replays", 0u);
  // The copy engines see the link as negotiated, not as it could be: a GPU
  // that trained at Gen3 x8 moves bytes at Gen3 x8 speed.
  const double link = lane_gbps(d.pcie.gen_current) * d.pcie.width_current * d.pcie.efficiency;
  d.pinned_gbps = get(j, "pinned_gbps", link);
  d.pageable_gbps = get(j, "pageable_gbps", d.pinned_gbps * pageable_factor);
  d.peer_gbps = get(j, "peer_gbps", d.pinned_gbps);
  d.peer_access = get(j, "peer_access", true);
}

// "mig_devices": [{"profile": "1g.18gb", "gpu_instance": 9, "sm_count": 16, ...}],
// "nvlink": {"links": 18, "down": [3], "errors": {"5": [replay, recovery, crc_flit]}}.
void parse_partitions_and_links(const json& j, DeviceDesc& d) {
  unsigned n = 0;
  for (const json& m : get(j, "mig_devices", json::array())) {
    MigDevice x;
    x.profile = m.at("profile").get<std::string>();
    x.gpu_instance = get(m, "gpu_instance", n + 1);
    x.compute_instance = get(m, "compute_instance", 0u);
    x.gpu_instance_slices = get(m, "gpu_instance_slices", 1u);
    x.compute_instance_slices = get(m, "compute_instance_slices", x.gpu_instance_slices);
    x.sm_count = get(m, "sm_count", 16u);
    x.memory_mib = get<uint64_t>(m, "memory_mib", 16384);
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "MIG-5a1c0de0-0000-4000-9000-%012x", x.gpu_instance * 16 + x.compute_instance);
    x.uuid = get<std::string>(m, "uuid", uuid);
    d.mig_devices.push_back(std::move(x));
    ++n;
  }
  const json links = get(j, "nvlink", json::object());
  d.nvlinks.count = std::min(get(links, "links", 0u), 18u);
  d.nvlinks.down = get(links, "down", std::vector<unsigned>{});
  const json errors = get(links, "errors", json::object());  // kept: items() views it
  for (const auto& [link, counts] : errors.items())
    d.nvlinks.errors[static_cast<unsigned>(std::stoul(link))] = counts.get<std::array<uint64_t, 3>>();
}

void parse_power_and_health(const json& j, DeviceDesc& d) {
  const json clocks = get(j, "clocks_mhz", json::object());
  d.sm_mhz = get(clocks, "sm", d.sm_mhz);
  d.sm_max_mhz = get(clocks, "sm_max", d.sm_max_mhz);
  d.mem_mhz = get(clocks, "mem", d.mem_mhz);
  d.mem_max_mhz = get(clocks, "mem_max", d.mem_max_mhz);
  d.app_sm_mhz = get(clocks, "applications_sm", d.sm_max_mhz);
  d.app_mem_mhz = get(clocks, "applications_mem", d.mem_max_mhz);
  d.clock_event_reasons = get<uint64_t>(j, "clock_event_reasons", 0);
  const json power = get(j, "power_w", json::object());
  d.power_idle_w = get(power, "idle", d.power_idle_w);
  d.power_max_w = get(power, "max", d.power_max_w);
  d.power_limit_w = get(power, "limit", d.power_limit_w);
  d.power_default_limit_w = get(power, "default_limit", d.power_limit_w);
  const json temp = get(j, "temperature_c", json::object());
  d.temp_idle_c = get(temp, "idle", d.temp_idle_c);
  d.temp_load_c = get(temp, "load", d.temp_load_c);
  const json ecc = get(j, "ecc", json::object());
  d.ecc[0][0] = get<uint64_t>(ecc, "volatile_corrected", 0);
  d.ecc[0][1] = get<uint64_t>(ecc, "volatile_uncorrected", 0);
  d.ecc[1][0] = get<uint64_t>(ecc, "aggregate_corrected", 0);
  d.ecc[1][1] = get<uint64_t>(ecc, "aggregate_uncorrected", 0);
  d.ecc_mode = get(ecc, "mode", 1u);
  d.ecc_pending_mode = get(ecc, "pending_mode", d.ecc_mode);
  const json rows = get(j, "remapped_rows", json::object());
  d.remapped_rows.correctable = get(rows, "correctable", 0u);
  d.remapped_rows.uncorrectable = get(rows, "uncorrectable", 0u);
  d.remapped_rows.pending = get(rows, "pending", false);
  d.remapped_rows.failure = get(rows, "failure", false);
  d.mig_mode = get(j, "mig_mode", 0u);
  parse_partitions_and_links(j, d);
  d.vbios = get<std::string>(j, "vbios", d.vbios);
  d.persistence_mode = get(j, "persistence_mode", 1u);
  d.lost = get(j, "lost", false);
  d.numa_node = get(j, "numa_node", 0);
  d.local_cpus = get<std::string>(j, "local_cpus", "");
  d.numa_affinity = get(j, "numa_affinity", true);
  for (const json& t : get(j, "tenants", json::array()))
    d.tenants.push_back(Tenant{t.at("pid").get<int>(), get<uint64_t>(t, "memory_mib", 0) << 20, get(t, "mps", false)});
}

DeviceDesc parse_device(const json& j, size_t index) {
  DeviceDesc d;
  d.name = get<std::string>(j, "name", "simgpu (simulated)");
  d.memory_bytes = get<uint64_t>(j, "memory_mib", 81559) << 20;
  d.reserved_bytes = get<uint64_t>(j, "reserved_mib", 512) << 20;
  d.sm_count = get(j, "sm_count", d.sm_count);
  const json cc = get(j, "compute_capability", json::array({9, 0}));
  d.cc_major = cc.at(0).get<int>();
  d.cc_minor = cc.at(1).get<int>();
  d.max_threads_per_sm = get(j, "max_threads_per_sm", d.max_threads_per_sm);
  d.pci_device_id = get_hex(j, "pci_device_id", 0x233510DE);
  parse_pcie(j, d, get(j, "pageable_factor", 0.25));
  d.dram_gbps = get(j, "dram_gbps", d.dram_gbps);
  d.fp32_tflops = get(j, "fp32_tflops", d.fp32_tflops);
  parse_power_and_health(j, d);
  d.pci_domain = get_hex(j, "pci_domain", 0);
  d.pci_bus = get_hex(j, "pci_bus", kBusNumbers[index % std::size(kBusNumbers)]);
  d.minor_number = get(j, "minor_number", static_cast<unsigned>(index));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%08X:%02X:00.0", d.pci_domain, d.pci_bus);
  d.pci_bus_id = buf;
  std::snprintf(buf, sizeof buf, "GPU-5a1c0de0-0000-4000-8000-%012zx", index);
  d.uuid = get<std::string>(j, "uuid", buf);
  return d;
}

KernelCost parse_kernel_cost(const json& j) {
  KernelCost k;
  if (auto it = j.find("class"); it != j.end()) {
    const auto s = it->get<std::string>();
    if (s != "compute" && s != "memory") throw std::runtime_error("kernel class must be compute or memory, not " + s);
    k.kind = s == "memory" ? KernelClass::Memory : KernelClass::Compute;
  }
  k.fixed_us = get(j, "us", -1.0);
  k.min_us = get(j, "min_us", -1.0);
  k.flops_per_thread = get(j, "flops_per_thread", -1.0);
  k.bytes_per_thread = get(j, "bytes_per_thread", -1.0);
  k.registers = get(j, "registers", -1);
  k.shared_bytes = get(j, "shared_bytes", -1);
  k.local_bytes = get(j, "local_bytes", -1);
  k.max_threads_per_block = get(j, "max_threads_per_block", -1);
  if (k.registers > 255 || k.max_threads_per_block == 0 || k.max_threads_per_block > 1024)
    throw std::runtime_error("kernel registers must be at most 255 and max_threads_per_block 1..1024");
  return k;
}

void parse_host_costs(const json& j, HostCosts& c) {
  struct Field { const char* key; double HostCosts::*member; };
  static constexpr Field fields[] = {
      {"launch", &HostCosts::launch}, {"kernel_start_latency", &HostCosts::kernel_start_latency},
      {"sync", &HostCosts::sync}, {"malloc", &HostCosts::malloc},
      {"malloc_per_mib", &HostCosts::malloc_per_mib}, {"free", &HostCosts::free},
      {"free_per_mib", &HostCosts::free_per_mib}, {"host_alloc", &HostCosts::host_alloc},
      {"host_alloc_per_mib", &HostCosts::host_alloc_per_mib},
      {"host_register_per_mib", &HostCosts::host_register_per_mib},
      {"async_alloc", &HostCosts::async_alloc},
      {"copy_latency_pinned", &HostCosts::copy_latency_pinned},
      {"copy_latency_pageable", &HostCosts::copy_latency_pageable},
      {"graph_launch", &HostCosts::graph_launch}};
  for (const Field& f : fields) c.*f.member = get(j, f.key, c.*f.member);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

const KernelCost* NodeDesc::kernel_override(std::string_view mangled, std::string_view short_name,
                                            std::string_view unqualified) const {
  for (std::string_view key : {mangled, short_name, unqualified}) {
    if (auto it = kernels.find(key); it != kernels.end()) return &it->second;
  }
  return nullptr;
}

NodeDesc parse_node(std::string_view json_text, std::string source) {
  json effective = json::parse(builtin_node_json());
  try {
    effective.merge_patch(json::parse(json_text));
  } catch (const json::exception& e) {
    throw std::runtime_error(source + ": " + e.what());
  }
  NodeDesc node;
  node.source = std::move(source);
  try {
    node.name = get<std::string>(effective, "name", "simgpu");
    node.driver_version = get<std::string>(effective, "driver_version", "580.82.07");
    node.cuda_driver_version = get(effective, "cuda_driver_version", 13000);
    node.init_error = get(effective, "init_error", 0);
    const json& tmpl = effective.at("device");
    // Each entry of "devices" is a patch over "device": {} is one more default GPU.
    for (const json& patch : effective.at("devices")) {
      json d = tmpl;
      d.merge_patch(patch);
      node.devices.push_back(parse_device(d, node.devices.size()));
    }
    parse_host_costs(get(effective, "host_costs_us", json::object()), node.costs);
    node.kernel_default = parse_kernel_cost(get(effective, "kernel_default", json::object()));
    const json kernels = get(effective, "kernels", json::object());
    for (const auto& [name, cost] : kernels.items()) node.kernels.emplace(name, parse_kernel_cost(cost));
    const json nvml = get(effective, "nvml", json::object());
    node.utilization_window_ms = get(nvml, "utilization_window_ms", 167.0);
    node.pcie_window_ms = get(nvml, "pcie_window_ms", 20.0);
    node.pcie_query_ms = get(nvml, "pcie_query_ms", 0.0);
  } catch (const std::exception& e) {
    throw std::runtime_error(node.source + ": " + e.what());
  }
  char fp[32];
  std::snprintf(fp, sizeof fp, "%016llx", static_cast<unsigned long long>(fnv1a(effective.dump())));
  node.fingerprint = fp;
  return node;
}

// Never destroyed: NVML and driver calls on other threads may still read it
// while the process runs its exit handlers.
const std::optional<NodeDesc>& process_node() {
  static const auto* node = new std::optional<NodeDesc>([]() -> std::optional<NodeDesc> {
    const char* path = std::getenv("SIMGPU_NODE");
    try {
      if (path && *path) return parse_node(read_file(path), path);
      return parse_node("{}", "built-in default");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "simgpu: bad node description: %s\n", e.what());
      return std::nullopt;
    }
  }());
  return *node;
}

}  // namespace simgpu
