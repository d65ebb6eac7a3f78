// The topology checks. May this process run on a CPU near the GPU? A GPU
// hangs off one CPU socket (NUMA node); a process whose CPUs (taskset, the
// cgroup cpuset) all sit on another socket sends every launch, copy and
// pinned-memory access across the socket interconnect. And are the GPU's
// NVLinks up: one link down cuts GPU-to-GPU bandwidth by its share.
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checks.h"

namespace gpuscope::doctor {
namespace {

using CpuSet = std::set<unsigned>;

constexpr unsigned kMaxCpus = 8192;  // the widest mask asked of NVML and the kernel
constexpr unsigned kMaxNumaNodes = 1024;
constexpr unsigned kBitsPerWord = 8 * sizeof(unsigned long);

// "0-3,8,10-11" (sysfs local_cpulist, taskset -c); false when it is not one.
bool parse_cpu_list(const std::string& text, CpuSet& cpus) {
  size_t at = 0;
  while (at < text.size() && !std::isspace(static_cast<unsigned char>(text[at]))) {
    char* end = nullptr;
    const unsigned long first = std::strtoul(text.c_str() + at, &end, 10);
    unsigned long last = first;
    if (end == text.c_str() + at) return false;
    if (*end == '-') last = std::strtoul(end + 1, &end, 10);
    if (last < first || last >= kMaxCpus) return false;
    for (unsigned long cpu = first; cpu <= last; ++cpu) cpus.insert(static_cast<unsigned>(cpu));
    at = static_cast<size_t>(end - text.c_str()) + (*end == ',' ? 1 : 0);
  }
  return !cpus.empty();
}

// The inverse: ranges joined by commas (of CPUs, or of NUMA nodes).
std::string cpu_list_text(const CpuSet& cpus) {
  std::string text;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const unsigned first = *it;
    unsigned last = first;
    while (++it != cpus.end() && *it == last + 1) ++last;
    text += (text.empty() ? "" : ",") + (first == last ? std::to_string(first) : fmt::format("{}-{}", first, last));
  }
  return text.empty() ? "none" : text;
}

// The CPUs this process may run on: taskset's mask and the cgroup cpuset
// both show here.
CpuSet allowed_cpus() {
  CpuSet cpus;
  cpu_set_t* set = CPU_ALLOC(kMaxCpus);
  const size_t size = CPU_ALLOC_SIZE(kMaxCpus);
  if (set != nullptr && sched_getaffinity(0, size, set) == 0)
    for (unsigned cpu = 0; cpu < kMaxCpus; ++cpu)
      if (CPU_ISSET_S(cpu, size, set)) cpus.insert(cpu);
  CPU_FREE(set);
  return cpus;
}

struct NearCpus {
  CpuSet cpus;
  std::set<unsigned> numa_nodes;  // empty: not reported
  std::string source;  // where the answer came from
  std::string error;   // why there is none
};

std::set<unsigned> bits_of(const std::vector<unsigned long>& mask) {
  std::set<unsigned> bits;
  for (unsigned bit = 0; bit < mask.size() * kBitsPerWord; ++bit)
    if (mask[bit / kBitsPerWord] & (1ul << (bit % kBitsPerWord))) bits.insert(bit);
  return bits;
}

bool near_cpus_from_nvml(const NodeProbe& probe, const Gpu& gpu, NearCpus& near) {
  std::vector<unsigned long> mask(kMaxCpus / kBitsPerWord);
  NvmlReads read(probe);
  if (!read("nvmlDeviceGetCpuAffinity", probe.api.device_get_cpu_affinity, gpu.handle,
            static_cast<unsigned>(mask.size()), mask.data())) {
    near.error = read.not_checked().summary;
    return false;
  }
  near.cpus = bits_of(mask);
  near.source = "NVML nvmlDeviceGetCpuAffinity";
  std::vector<unsigned long> nodes(kMaxNumaNodes / kBitsPerWord);
  if (NvmlReads(probe)("nvmlDeviceGetMemoryAffinity", probe.api.device_get_memory_affinity, gpu.handle,
                       static_cast<unsigned>(nodes.size()), nodes.data(), nvml::kAffinityScopeNode)) {
    near.numa_nodes = bits_of(nodes);
    near.source += ", nvmlDeviceGetMemoryAffinity";
  }
  return true;
}

// sysfs names a PCI device "0000:18:00.0": NVML's bus id with a 4-digit domain, lowercase.
std::string sysfs_device(const std::string& bus_id) {
  std::string name = bus_id.size() == 16 ? bus_id.substr(4) : bus_id;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return "/sys/bus/pci/devices/" + name;
}

bool near_cpus_from_sysfs(const Gpu& gpu, NearCpus& near) {
  const std::string dir = sysfs_device(gpu.bus_id);
  std::string list;
  if (std::ifstream in(dir + "/local_cpulist"); !(in >> list) || !parse_cpu_list(list, near.cpus)) {
    near.error += "; " + dir + "/local_cpulist unreadable";
    return false;
  }
  near.source = dir + "/local_cpulist";
  if (int node = -1; std::ifstream(dir + "/numa_node") >> node && node >= 0)  // -1: a machine without NUMA
    near.numa_nodes.insert(static_cast<unsigned>(node));
  return true;
}

std::string numa_text(const std::set<unsigned>& nodes) {
  if (nodes.empty()) return "NUMA node not reported";
  return fmt::format("NUMA node{} {}", nodes.size() == 1 ? "" : "s", cpu_list_text(nodes));
}

std::string placement_fix(const NearCpus& near) {
  std::string fix = "run the GPU's feeding threads on its CPUs: taskset -c " + cpu_list_text(near.cpus);
  if (!near.numa_nodes.empty())
    fix += fmt::format(" or numactl --cpunodebind={0} --membind={0}", cpu_list_text(near.numa_nodes));
  return fix + "; in Kubernetes, the kubelet's topology manager (single-numa-node) with static CPU management";
}

}  // namespace

Finding check_topology(const NodeProbe& probe, const Gpu& gpu) {
  NearCpus near;
  if (!near_cpus_from_nvml(probe, gpu, near) && !near_cpus_from_sysfs(gpu, near)) return not_checked(near.error);
  if (near.cpus.empty()) return not_checked(near.source + " names no CPU near the GPU");
  const CpuSet allowed = allowed_cpus();
  if (allowed.empty()) return not_checked("sched_getaffinity failed: the CPUs this process may run on are unknown");
  CpuSet overlap;
  std::set_intersection(allowed.begin(), allowed.end(), near.cpus.begin(), near.cpus.end(),
                        std::inserter(overlap, overlap.end()));
  const std::string gpu_side = fmt::format("GPU {} ({}, CPUs {})", gpu.index, numa_text(near.numa_nodes),
                                           cpu_list_text(near.cpus));
  Finding f = overlap.empty()
                  ? warned(fmt::format("none of the CPUs this process may run on ({}) is near {}: every launch, copy "
                                       "and pinned buffer crosses the socket interconnect",
                                       cpu_list_text(allowed), gpu_side),
                           placement_fix(near))
                  : passed(fmt::format("{} of the {} CPUs this process may run on are near {}", overlap.size(),
                                       allowed.size(), gpu_side));
  f.evidence.push_back(fmt::format("near the GPU ({}): CPUs {}, {}", near.source, cpu_list_text(near.cpus),
                                   numa_text(near.numa_nodes)));
  f.evidence.push_back("this process may run on (sched_getaffinity: taskset, cgroup cpuset): CPUs " +
                       cpu_list_text(allowed));
  return f;
}

namespace {

// "link 5: 12 replay, 1 recovery" for each link with a counter above zero.
std::vector<std::string> nvlink_error_counts(const NodeProbe& probe, const Gpu& gpu) {
  std::vector<std::string> lines;
  const auto counter = probe.api.device_get_nvlink_error_counter;
  if (counter == nullptr) return lines;
  static constexpr std::pair<int, const char*> kCounters[] = {
      {nvml::kNvlinkErrorReplay, "replay"}, {nvml::kNvlinkErrorRecovery, "recovery"}, {nvml::kNvlinkErrorCrcFlit, "CRC flit"}};
  for (const nvml::NvLink& link : gpu.nvlinks) {
    std::string counts;
    for (const auto& [kind, name] : kCounters)
      if (unsigned long long n = 0; counter(gpu.handle, link.link, kind, &n) == nvml::kSuccess && n > 0)
        counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, name);
    if (!counts.empty()) lines.push_back(fmt::format("link {} error counters: {}", link.link, counts));
  }
  return lines;
}

}  // namespace

Finding check_nvlink(const NodeProbe& probe, const Gpu& gpu) {
  if (gpu.nvlinks.empty()) {
    if (!gpu.nvlink_not_read.empty()) return not_checked(gpu.nvlink_not_read);
    return passed("no NVLink on this GPU: GPU-to-GPU copies go over PCIe");
  }
  std::vector<unsigned> down;
  for (const nvml::NvLink& link : gpu.nvlinks)
    if (!link.active) down.push_back(link.link);
  const unsigned up = nvml::active_links(gpu.nvlinks);
  Finding f = passed(fmt::format("all {} NVLinks are up", gpu.nvlinks.size()));
  if (up == 0)  // a PCIe card without its bridge: not a fault, but GPU-to-GPU traffic takes PCIe
    f = passed(fmt::format("none of the {} NVLinks is up (no bridge or switch attached): GPU-to-GPU copies go over "
                           "PCIe",
                           gpu.nvlinks.size()));
  else if (!down.empty())
    f = warned(fmt::format("{} of {} NVLinks down (link {}): GPU-to-GPU bandwidth is cut by {:.0f}% and collectives "
                           "slow down with it",
                           down.size(), gpu.nvlinks.size(), fmt::join(down, ", "),
                           100.0 * static_cast<double>(down.size()) / static_cast<double>(gpu.nvlinks.size())),
               "check the links (nvidia-smi nvlink -s, nvidia-smi nvlink -e) and the fabric manager on NVSwitch "
               "systems (systemctl status nvidia-fabricmanager); reset the GPU or drain the node for service");
  f.evidence.push_back(fmt::format("{} NVLinks, {} up", gpu.nvlinks.size(), up));
  for (std::string& line : nvlink_error_counts(probe, gpu)) f.evidence.push_back(std::move(line));
  return f;
}

}  // namespace gpuscope::doctor
