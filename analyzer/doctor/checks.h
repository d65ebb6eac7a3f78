// The check functions the table in check_table.cpp names. A node check
// judges the node as a whole; a GPU check one GPU. Each returns its finding
// (a query NVML cannot answer makes it "not checked", NvmlReads); the table
// adds the name, the threshold and its source.
#pragma once

#include "doctor.h"
#include "node_probe.h"

namespace gpuscope::doctor {

Finding check_driver(const NodeProbe& probe);
Finding check_devices(const NodeProbe& probe);
Finding check_cuda_runtime(const NodeProbe& probe);
Finding check_kernel_log(const NodeProbe& probe);
Finding check_host_pressure(const NodeProbe& probe);
Finding check_clocksource(const NodeProbe& probe);
Finding check_mps(const NodeProbe& probe);
Finding check_baseline(const NodeProbe& probe);  // only with options.baseline

Finding check_pcie_link(const NodeProbe& probe, const Gpu& gpu);
Finding check_clocks(const NodeProbe& probe, const Gpu& gpu);
Finding check_power(const NodeProbe& probe, const Gpu& gpu);
Finding check_persistence_mode(const NodeProbe& probe, const Gpu& gpu);
Finding check_ecc(const NodeProbe& probe, const Gpu& gpu);
Finding check_row_remapping(const NodeProbe& probe, const Gpu& gpu);
Finding check_mig(const NodeProbe& probe, const Gpu& gpu);
Finding check_tenancy(const NodeProbe& probe, const Gpu& gpu);
Finding check_topology(const NodeProbe& probe, const Gpu& gpu);
Finding check_nvlink(const NodeProbe& probe, const Gpu& gpu);
Finding check_canary(const NodeProbe& probe, const Gpu& gpu);  // only with options.canary

// The GPUs CUDA_VISIBLE_DEVICES lets CUDA see, in its order: indices or
// (prefixes of) UUIDs; CUDA stops at the first entry that names no GPU.
struct VisibleDevices {
  bool restricted = false;  // the variable is set
  std::string value;
  std::vector<const Gpu*> gpus;
  std::vector<std::string> mig_instances;  // MIG-<uuid> entries, as written
  std::string first_invalid;  // the entry that ended the list, if one did
};
VisibleDevices visible_devices(const std::vector<Gpu>& gpus);

// The MIG device a CUDA process started here lands on. CUDA enumerates one
// MIG device per process: the first MIG-<uuid> of CUDA_VISIBLE_DEVICES that
// names one, else the first MIG device of the first visible GPU in MIG mode.
struct MigLanding {
  const Gpu* gpu = nullptr;  // nullptr: no MIG device (why says why)
  const nvml::MigDevice* slice = nullptr;
  std::string why;
};
MigLanding mig_landing(const NodeProbe& probe);

// Payload GB/s of one PCIe lane of generation `gen` (0 when unknown).
double lane_gbytes_per_s(unsigned gen);

// Shorthands for building findings.
Finding passed(std::string summary);
Finding warned(std::string summary, std::string fix);
Finding failed(std::string summary, std::string fix);
Finding not_checked(std::string why);

// The more severe of two findings (the first when equal), so a check that
// judges several things reports the worst with all their evidence.
Finding worse(Finding a, Finding b);

}  // namespace gpuscope::doctor
