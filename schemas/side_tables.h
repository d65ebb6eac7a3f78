// Plain C++ mirrors of the trace's side tables (strings and lists that do
// not fit fixed-size records): what a GPU is, what the process could see of
// the GPU stack, and which libraries it tried to load. The capture side fills
// them and ChunkBuilder writes them; the reader turns tables back into them.
// Shared like the schema itself, so the two sides describe one thing once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuscope::container {

struct DeviceDescription {
  uint32_t index = 0;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  uint64_t memory_total_bytes = 0;
  uint8_t pcie_gen_current = 0, pcie_gen_max = 0, pcie_width_current = 0, pcie_width_max = 0;
  int8_t mig_mode = -1;
  int8_t ecc_mode = -1;
  uint64_t ecc_corrected = 0, ecc_uncorrected = 0;
  int32_t numa_node = -1;
  std::string local_cpus;
  std::vector<std::string> unsupported;  // NVML queries that are not supported here
  // Format 1.7.
  std::string vbios;
  int8_t persistence_mode = -1;
  uint32_t power_limit_mw = 0, power_default_limit_mw = 0;
  std::string mig_devices;  // MIG on: the layout by profile ("1g.18gb x2"); empty when off or unknown
  uint8_t nvlinks = 0, nvlinks_active = 0;
};

struct LibraryLoadEvent {
  uint64_t start_ns = 0;
  uint32_t tid = 0;
  std::string path;
  std::string resolved_path;
  int flags = 0;
  bool ok = false;
  std::string error;
  bool deepbind_stripped = false;
  bool unload = false;
};

struct DeviceNodeState {
  std::string path;
  bool exists = false, readable = false, writable = false;
};

struct EnvironmentProbeData {
  std::vector<DeviceNodeState> device_nodes;
  bool driver_loaded = false;
  std::string driver_error;
  int driver_version = -1;
  std::string nvml_status;
  std::string nvml_driver_version;
  int visible_devices = -1;
};

// Device-activity (CUPTI) collection status; `state` and `clock` hold
// fb::DeviceCollectionState / fb::DeviceClock values.
struct DeviceCollectionData {
  uint8_t state = 0;
  std::string reason;
  uint32_t cupti_version = 0;
  std::string cupti_path;
  uint64_t records = 0, dropped = 0, buffers_refused = 0, unconverted = 0, uncorrelated = 0;
  uint8_t clock = 0;
  uint32_t calibration_pairs = 0;
};

// Call-stack capture status (format 1.3); `state` holds a
// fb::StackCaptureState value.
struct StackCaptureData {
  uint8_t state = 0;
  std::string reason;
  uint32_t depth = 0;
  uint64_t unwind_failures = 0, table_full = 0;
  bool operator==(const StackCaptureData&) const = default;
};

// CPU stack sampling status (format 1.4); `state` holds a
// fb::HostSamplingState value.
struct HostSamplingData {
  uint8_t state = 0;
  std::string reason;
  uint64_t period_ns = 0;
  uint64_t samples = 0, lost = 0;
  uint32_t threads = 0, threads_refused = 0;
  uint64_t unreadable = 0;
  bool operator==(const HostSamplingData&) const = default;
};

// A loaded object, for turning return addresses into module + offset.
struct ModuleDescription {
  uint32_t id = 0;
  std::string path;
  std::vector<uint8_t> build_id;
  uint64_t load_address = 0;  // l_addr: ELF vaddr + load_address = runtime address
  uint64_t low_address = 0;   // lowest runtime address of its PT_LOAD segments
  uint64_t high_address = 0;  // one past the highest
};

// A deduplicated call stack: raw return addresses, innermost first.
struct StackDescription {
  uint32_t id = 0;
  std::vector<uint64_t> frames;
};

// Chunk.import_source (format 1.5): an imported trace's origin.
struct ImportSourceData {
  std::string format, path, producer;
  std::vector<std::string> notes;
  uint64_t events = 0, skipped = 0, unjoined = 0, out_of_range = 0;
  bool complete = true;
  std::string damage;
  bool mid_run = false;
};

// Chunk.python_codes (format 1.6): a CPython code object seen in a stack.
struct PythonCodeDescription {
  uint64_t key = 0;  // the code object's address, as Python frames in stacks hold it
  std::string file, name;
  uint32_t first_line = 0;
  std::vector<uint8_t> line_table;
  bool line_table_cut = false;
};

// Chunk.python_stacks (format 1.6); `state` holds a fb::PythonStacksState value.
struct PythonStacksData {
  uint8_t state = 0;
  uint32_t version = 0;  // PY_VERSION_HEX
  std::string reason;
  uint64_t chains_cut = 0, codes_dropped = 0;
  bool operator==(const PythonStacksData&) const = default;
};

// Chunk.gpu_processes (format 1.8): a process NVML listed on a GPU.
struct GpuProcessName {
  uint32_t pid = 0;
  uint16_t device = 0;
  std::string name;
};

}  // namespace gpuscope::container
