// What the checks read: NVML opened once with its GPUs enumerated, and the
// CUDA runtime found on the library path with the versions it reports.
#pragma once

#include <string>
#include <vector>

#include "doctor.h"
#include "node_facts.h"
#include "nvml_api.h"
#include "nvml_partitions.h"

namespace gpuscope::doctor {

struct Gpu {
  unsigned index = 0;  // NVML's: every GPU of the node, CUDA_VISIBLE_DEVICES or not
  nvml::Device handle = nullptr;
  std::string name, uuid, bus_id;
  bool mig_enabled = false;
  std::vector<nvml::MigDevice> mig_devices;
  std::string mig_not_listed;  // why the MIG devices could not be listed ("" when they were)
  std::vector<nvml::NvLink> nvlinks;  // the links NVML answers for; none on a GPU without NVLink
  std::string nvlink_not_read;  // why the link states could not be read
};

struct CudaRuntime {
  std::string path;   // the libcudart that was loaded; empty when none was
  std::string error;  // why none was, or why its versions are unknown
  int runtime_version = 0, driver_version = 0;  // 13000 = 13.0; driver 0 = none installed
};

struct NodeProbe {
  DoctorOptions options;
  bool nvml_ok = false;
  std::string nvml_status;  // "ok", or why NVML is unusable
  nvml::Api api;
  std::string driver_version;
  std::vector<Gpu> gpus;
  // GPUs NVML counts but cannot open ("GPU N: GPU is lost (15)": fallen off the bus).
  std::vector<std::string> unreachable_gpus;
  CudaRuntime cudart;
  NodeFacts facts;  // what --baseline compares and --json records
};

NodeProbe probe_node(const DoctorOptions& options);

// "13.0" for 13000.
std::string cuda_version_text(int version);

// Reads NVML values one query after another, keeping the first that fails,
// so a check reads everything it needs and then asks once whether it could:
//   NvmlReads read(probe);
//   read("nvmlDeviceGetCurrPcieLinkWidth", api.device_get_curr_pcie_link_width, gpu.handle, &width);
//   if (!read.ok()) return read.not_checked();
class NvmlReads {
 public:
  explicit NvmlReads(const NodeProbe& probe) : probe_(probe) {}

  template <class Fn, class... Args> bool operator()(const char* function, Fn fn, Args... args) {
    if (!failed_.empty()) return false;
    return record(function, fn != nullptr ? fn(args...) : nvml::kFunctionNotFound);
  }
  // Keeps the answer of a query made by hand; true on success.
  bool record(const char* function, nvml::Return r) {
    if (r != nvml::kSuccess && failed_.empty()) {
      failed_ = function;
      result_ = r;
    }
    return r == nvml::kSuccess;
  }
  bool ok() const { return failed_.empty(); }
  nvml::Return result() const { return result_; }
  // "not checked: nvmlDeviceGetRemappedRows: Not Supported (3)".
  Finding not_checked() const;

 private:
  const NodeProbe& probe_;
  std::string failed_;
  nvml::Return result_ = nvml::kSuccess;
};

}  // namespace gpuscope::doctor
