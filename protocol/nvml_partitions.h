// How a GPU is split and linked, as NVML tells it: the MIG devices under a
// GPU in MIG mode, and its NVLinks. Read the same way by `gpuscope doctor`
// (its mig and nvlink checks, the baseline's facts) and by the preloaded
// library (the trace's device descriptions), so both describe a node alike.
#pragma once

#include <string>
#include <vector>

#include "nvml_api.h"

namespace gpuscope::nvml {

// A MIG device: one compute instance of one GPU instance, what a CUDA
// process gets of a GPU in MIG mode.
struct MigDevice {
  unsigned gpu_instance = 0, compute_instance = 0;
  std::string name, uuid;  // "NVIDIA H200 MIG 1g.18gb", "MIG-..."
  unsigned sm_count = 0;   // 0: NVML did not say
  unsigned long long memory_mib = 0;
  std::string profile() const;  // "1g.18gb": the name after "MIG ", else "GPU instance N"
};

// The MIG devices under `gpu`, by MIG device index (a GPU in MIG mode only).
// False, saying why, when this NVML cannot list them.
bool list_mig_devices(const Api& api, Device gpu, std::vector<MigDevice>* devices, std::string* why);

// The MIG devices by profile, sorted: "1g.18gb x2, 3g.71gb"; "none" for none.
std::string mig_layout(const std::vector<MigDevice>& devices);

struct NvLink {
  unsigned link = 0;
  bool active = false;
};

// The links NVML answers for (none on a GPU without NVLink: Not Supported;
// a link number past the GPU's: Invalid Argument). False, saying why, when
// a link could not be read for another reason.
bool read_nvlinks(const Api& api, Device gpu, std::vector<NvLink>* links, std::string* why);

// How many of `links` are up.
unsigned active_links(const std::vector<NvLink>& links);

}  // namespace gpuscope::nvml
