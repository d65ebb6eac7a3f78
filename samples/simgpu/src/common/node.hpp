// The node description: what simulated GPUs this machine has and what every
// modeled operation costs.  One JSON document (nodes/default.json is built in;
// SIMGPU_NODE names another) that the driver, the runtime's driver and NVML
// all read, so every library of one process tells the same story.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simgpu {

enum class KernelClass { Compute, Memory };

struct PcieLink {
  int gen_current = 5, width_current = 16, gen_max = 5, width_max = 16;
  double efficiency = 0.85;  // payload share of the raw link rate
  unsigned replays = 0;       // NVML's PCIe replay counter
};

// A process of another tenant that holds a context on the device: NVML
// lists it with the processes that drive the simulated GPU (an MPS client
// among the MPS processes instead).
struct Tenant {
  int pid = 0;
  uint64_t memory_bytes = 0;
  bool mps = false;  // a client of an MPS server: NVML lists it among the MPS processes
};

// Row remapping (Ampere and later): rows remapped for correctable and
// uncorrectable errors, a remap waiting for the next reset, a failed one.
struct RemappedRows {
  unsigned correctable = 0, uncorrectable = 0;
  bool pending = false, failure = false;
};

// A MIG device: a GPU instance's compute instance (nvidia-smi mig -cgi ... -C).
struct MigDevice {
  std::string profile, uuid;  // "1g.18gb"; "MIG-..."
  unsigned gpu_instance = 0, compute_instance = 0;
  unsigned gpu_instance_slices = 1, compute_instance_slices = 1, sm_count = 0;
  uint64_t memory_mib = 0;
};

// NVLink: how many links the GPU has, which are down, and per link the
// replay, recovery and CRC flit error counters (nvmlNvLinkErrorCounter_t order).
struct NvLinks {
  unsigned count = 0;  // 0: a GPU without NVLink (NVML answers Not Supported)
  std::vector<unsigned> down;
  std::map<unsigned, std::array<uint64_t, 3>> errors;
};

struct DeviceDesc {
  std::string name, uuid, pci_bus_id;
  unsigned pci_domain = 0, pci_bus = 0, pci_device = 0, pci_device_id = 0;
  uint64_t memory_bytes = 0, reserved_bytes = 0;
  int sm_count = 132, cc_major = 9, cc_minor = 0, max_threads_per_sm = 2048;
  PcieLink pcie;
  double pinned_gbps = 0, pageable_gbps = 0;  // derived from the link unless given
  // Device-to-device copies to or from another GPU: whether this one can
  // access its peers directly, and at what rate (default: its PCIe link's
  // pinned rate, peers talking through the PCIe switch).
  bool peer_access = true;
  double peer_gbps = 0;
  double dram_gbps = 4800, fp32_tflops = 67;
  unsigned sm_mhz = 1980, sm_max_mhz = 1980, mem_mhz = 3201, mem_max_mhz = 3201;
  // Applications clocks (nvidia-smi -ac); 0: the maximum clocks.
  unsigned app_sm_mhz = 0, app_mem_mhz = 0;
  std::string vbios = "96.00.99.00.01";
  uint64_t clock_event_reasons = 0;
  double power_idle_w = 90, power_max_w = 700, power_limit_w = 700;
  double power_default_limit_w = 700;  // the board's default limit (else: the limit)
  unsigned temp_idle_c = 32, temp_load_c = 68;
  // [volatile, aggregate][corrected, uncorrected], NVML's index order.
  std::array<std::array<uint64_t, 2>, 2> ecc{};
  unsigned ecc_mode = 1, ecc_pending_mode = 1;
  RemappedRows remapped_rows;
  unsigned mig_mode = 0;
  std::vector<MigDevice> mig_devices;  // with mig_mode 1; none: MIG on, no instance created
  NvLinks nvlinks;
  unsigned persistence_mode = 1;
  unsigned minor_number = 0;  // /dev/nvidiaN (else the device's index)
  bool lost = false;          // fallen off the bus: NVML cannot open it (GPU is lost)
  // The NUMA node the GPU hangs off and the CPUs near it, a CPU list such as
  // "0-63,128-191" (empty: every CPU of the machine, one NUMA node).
  // numa_affinity false: NVML answers Not Supported for both affinity queries (a platform
  // without them), and a reader has to fall back to sysfs.
  int numa_node = 0;
  std::string local_cpus;
  bool numa_affinity = true;
  std::vector<Tenant> tenants;

  // A clock below its maximum (throttling) slows compute-class kernels.
  double compute_clock_ratio() const {
    return sm_max_mhz ? static_cast<double>(sm_mhz) / sm_max_mhz : 1.0;
  }
};

// Host-side costs in microseconds (JSON "host_costs_us").
struct HostCosts {
  double launch = 3, kernel_start_latency = 3, sync = 1;
  double malloc = 30, malloc_per_mib = 1.5, free = 20, free_per_mib = 0.5;
  double host_alloc = 50, host_alloc_per_mib = 250, host_register_per_mib = 150;
  double async_alloc = 1, copy_latency_pinned = 2.5, copy_latency_pageable = 8;
  double graph_launch = 3;  // one cudaGraphLaunch, whatever the graph holds
};

// How long a kernel runs: a fixed time, or the slower of its arithmetic and
// its DRAM traffic, both proportional to the launched thread count.  Also the
// resources one thread block takes on an SM (what the occupancy calculator
// and cudaFuncGetAttributes report): simgpu compiles nothing, so a kernel
// uses what the node says, by default 32 registers per thread, no static
// shared memory and up to 1024 threads per block.  -1: not given.
struct KernelCost {
  std::optional<KernelClass> kind;
  double fixed_us = -1, min_us = -1, flops_per_thread = -1, bytes_per_thread = -1;
  int registers = -1, shared_bytes = -1, local_bytes = -1, max_threads_per_block = -1;
};

struct NodeDesc {
  std::string name, source, driver_version;
  int cuda_driver_version = 13000;
  // What cuInit answers on this node (a CUresult), 0 for success: a driver
  // that is present but refuses, e.g. 801 (not supported) in a container
  // whose driver does not support this GPU or mode.
  int init_error = 0;
  std::vector<DeviceDesc> devices;
  HostCosts costs;
  KernelCost kernel_default;
  std::map<std::string, KernelCost, std::less<>> kernels;
  double utilization_window_ms = 167, pcie_window_ms = 20;
  // How long one nvmlDeviceGetPcieThroughput call blocks. Real NVML measures
  // over its window inside the call (about 20 ms per direction on an H200);
  // simgpu answers at once unless a node asks for that cost.
  double pcie_query_ms = 0;
  std::string fingerprint;  // hash of the effective description: names shared state

  const KernelCost* kernel_override(std::string_view mangled, std::string_view short_name,
                                    std::string_view unqualified) const;
};

// Parses a node file merged over the built-in default; throws
// std::runtime_error with a readable message on malformed input.
NodeDesc parse_node(std::string_view json_text, std::string source);
// The node of this process: SIMGPU_NODE's file, else the built-in default.
// Parsed once; a bad file is reported on stderr and yields std::nullopt.
const std::optional<NodeDesc>& process_node();
std::string_view builtin_node_json();

}  // namespace simgpu
