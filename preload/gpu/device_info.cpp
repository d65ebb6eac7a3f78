#include "device_info.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "nvml_partitions.h"

namespace gpuscope::gpu {
namespace {

using container::DeviceDescription;
using nvml::Api;
using nvml::Device;
using nvml::Return;

// A call through an optional entry point: a missing one answers
// kFunctionNotFound, like NVML itself for functions a driver lacks.
template <class Fn, class... Args> Return call(Fn fn, Args... args) {
  return fn != nullptr ? fn(args...) : nvml::kFunctionNotFound;
}

template <class Field> Return unsigned_fact(Return (*fn)(Device, unsigned*), Device dev, Field& field) {
  unsigned value = 0;
  const Return r = call(fn, dev, &value);
  if (r == nvml::kSuccess) field = static_cast<Field>(value);
  return r;
}

template <size_t N> Return string_fact(Return (*fn)(Device, char*, unsigned), Device dev, std::string& field) {
  char buf[N] = {};
  const Return r = call(fn, dev, buf, static_cast<unsigned>(N));
  if (r == nvml::kSuccess) field.assign(buf, strnlen(buf, N));
  return r;
}

Return ecc_count(const Api& a, Device dev, int type, uint64_t& field) {
  unsigned long long n = 0;
  const Return r = call(a.device_get_total_ecc_errors, dev, type, nvml::kAggregateEcc, &n);
  if (r == nvml::kSuccess) field = n;
  return r;
}

// One row per static fact: the NVML function it comes from and how.
struct DescribeQuery {
  const char* name;
  Return (*query)(const Api&, Device, container::DeviceDescription&);
};

constexpr DescribeQuery kQueries[] = {
    {"nvmlDeviceGetName", [](const Api& a, Device v, container::DeviceDescription& d) { return string_fact<96>(a.device_get_name, v, d.name); }},
    {"nvmlDeviceGetUUID", [](const Api& a, Device v, container::DeviceDescription& d) { return string_fact<96>(a.device_get_uuid, v, d.uuid); }},
    {"nvmlDeviceGetPciInfo_v3",
     [](const Api& a, Device v, container::DeviceDescription& d) {
       nvml::PciInfo pci{};
       const Return r = call(a.device_get_pci_info_v3, v, &pci);
       if (r == nvml::kSuccess) d.pci_bus_id.assign(pci.bus_id, strnlen(pci.bus_id, sizeof pci.bus_id));
       return r;
     }},
    {"nvmlDeviceGetMemoryInfo",
     [](const Api& a, Device v, container::DeviceDescription& d) {
       nvml::Memory m{};
       const Return r = call(a.device_get_memory_info, v, &m);
       if (r == nvml::kSuccess) d.memory_total_bytes = m.total;
       return r;
     }},
    {"nvmlDeviceGetCurrPcieLinkGeneration",
     [](const Api& a, Device v, container::DeviceDescription& d) { return unsigned_fact(a.device_get_curr_pcie_link_generation, v, d.pcie_gen_current); }},
    {"nvmlDeviceGetMaxPcieLinkGeneration",
     [](const Api& a, Device v, container::DeviceDescription& d) { return unsigned_fact(a.device_get_max_pcie_link_generation, v, d.pcie_gen_max); }},
    {"nvmlDeviceGetCurrPcieLinkWidth",
     [](const Api& a, Device v, container::DeviceDescription& d) { return unsigned_fact(a.device_get_curr_pcie_link_width, v, d.pcie_width_current); }},
    {"nvmlDeviceGetMaxPcieLinkWidth",
     [](const Api& a, Device v, container::DeviceDescription& d) { return unsigned_fact(a.device_get_max_pcie_link_width, v, d.pcie_width_max); }},
    {"nvmlDeviceGetMigMode",
     [](const Api& a, Device v, container::DeviceDescription& d) {
       unsigned current = 0, pending = 0;
       const Return r = call(a.device_get_mig_mode, v, &current, &pending);
       if (r == nvml::kSuccess) d.mig_mode = current != 0 ? 1 : 0;
       return r;
     }},
    {"nvmlDeviceGetEccMode",
     [](const Api& a, Device v, container::DeviceDescription& d) {
       int current = 0, pending = 0;
       const Return r = call(a.device_get_ecc_mode, v, &current, &pending);
       if (r == nvml::kSuccess) d.ecc_mode = current != 0 ? 1 : 0;
       return r;
     }},
    {"nvmlDeviceGetVbiosVersion",
     [](const Api& a, Device v, container::DeviceDescription& d) { return string_fact<64>(a.device_get_vbios_version, v, d.vbios); }},
    {"nvmlDeviceGetPersistenceMode",
     [](const Api& a, Device v, container::DeviceDescription& d) {
       int mode = 0;
       const Return r = call(a.device_get_persistence_mode, v, &mode);
       if (r == nvml::kSuccess) d.persistence_mode = mode == nvml::kEnabled ? 1 : 0;
       return r;
     }},
    {"nvmlDeviceGetEnforcedPowerLimit",
     [](const Api& a, Device v, container::DeviceDescription& d) { return unsigned_fact(a.device_get_enforced_power_limit, v, d.power_limit_mw); }},
    {"nvmlDeviceGetPowerManagementDefaultLimit",
     [](const Api& a, Device v, container::DeviceDescription& d) {
       return unsigned_fact(a.device_get_power_management_default_limit, v, d.power_default_limit_mw);
     }},
    {"nvmlDeviceGetTotalEccErrors(corrected)",
     [](const Api& a, Device v, container::DeviceDescription& d) { return ecc_count(a, v, nvml::kEccCorrected, d.ecc_corrected); }},
    {"nvmlDeviceGetTotalEccErrors(uncorrected)",
     [](const Api& a, Device v, container::DeviceDescription& d) { return ecc_count(a, v, nvml::kEccUncorrected, d.ecc_uncorrected); }},
};

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

// MIG devices (with MIG on) and NVLinks, read as doctor reads them.
void describe_partitions_and_links(const Api& api, Device device, container::DeviceDescription& d) {
  std::string why;
  if (std::vector<nvml::MigDevice> migs; d.mig_mode == 1 && nvml::list_mig_devices(api, device, &migs, &why))
    d.mig_devices = nvml::mig_layout(migs);
  std::vector<nvml::NvLink> links;
  nvml::read_nvlinks(api, device, &links, &why);
  d.nvlinks = static_cast<uint8_t>(links.size());
  d.nvlinks_active = static_cast<uint8_t>(nvml::active_links(links));
}

}  // namespace

std::string unsupported_name(const char* query, Return r) {
  return r == nvml::kFunctionNotFound ? std::string(query) + " (absent)" : std::string(query);
}

container::DeviceDescription describe_device(const Api& api, Device device, uint32_t index,
                                           const std::string& pci_devices_dir) {
  container::DeviceDescription d;
  d.index = index;
  for (const DescribeQuery& q : kQueries) {
    const Return r = q.query(api, device, d);
    if (r == nvml::kNotSupported || r == nvml::kFunctionNotFound) d.unsupported.push_back(unsupported_name(q.name, r));
  }
  describe_partitions_and_links(api, device, d);
  const std::string address = sysfs_pci_address(d.pci_bus_id);
  if (!address.empty()) read_pci_topology(pci_devices_dir + "/" + address, d);
  return d;
}

std::string sysfs_pci_address(const std::string& nvml_bus_id) {
  const size_t colon = nvml_bus_id.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 8) return {};
  char* end = nullptr;
  const std::string domain_hex = nvml_bus_id.substr(0, colon);  // outlives `end`, which points into it
  const unsigned long domain = std::strtoul(domain_hex.c_str(), &end, 16);
  if (end == nullptr || *end != '\0') return {};
  std::string rest = nvml_bus_id.substr(colon + 1);  // "18:00.0"
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.') return {};
  for (char& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  char domain_text[16];
  std::snprintf(domain_text, sizeof domain_text, "%04lx", domain);
  return std::string(domain_text) + ":" + rest;
}

void read_pci_topology(const std::string& device_dir, container::DeviceDescription& d) {
  const std::string numa = first_line(device_dir + "/numa_node");
  if (!numa.empty()) {
    char* end = nullptr;
    const long node = std::strtol(numa.c_str(), &end, 10);
    if (end != nullptr && *end == '\0') d.numa_node = static_cast<int32_t>(node);
  }
  d.local_cpus = first_line(device_dir + "/local_cpulist");
}

}  // namespace gpuscope::gpu
