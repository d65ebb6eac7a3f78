#include "nvml_partitions.h"

#include <cstring>
#include <map>

namespace gpuscope::nvml {
namespace {

template <size_t N> std::string read_string(Return (*fn)(Device, char*, unsigned), Device device) {
  char buf[N] = {};
  if (fn == nullptr || fn(device, buf, static_cast<unsigned>(N)) != kSuccess) return {};
  return std::string(buf, strnlen(buf, N));
}

MigDevice describe_mig_device(const Api& api, Device mig) {
  MigDevice d;
  d.name = read_string<96>(api.device_get_name, mig);
  d.uuid = read_string<96>(api.device_get_uuid, mig);
  if (api.device_get_gpu_instance_id != nullptr) api.device_get_gpu_instance_id(mig, &d.gpu_instance);
  if (api.device_get_compute_instance_id != nullptr) api.device_get_compute_instance_id(mig, &d.compute_instance);
  if (DeviceAttributes a{}; api.device_get_attributes_v2 != nullptr && api.device_get_attributes_v2(mig, &a) == kSuccess) {
    d.sm_count = a.multiprocessor_count;
    d.memory_mib = a.memory_size_mb;
  }
  return d;
}

}  // namespace

std::string MigDevice::profile() const {
  const size_t at = name.rfind("MIG ");
  return at != std::string::npos && at + 4 < name.size() ? name.substr(at + 4)
                                                          : "GPU instance " + std::to_string(gpu_instance);
}

bool list_mig_devices(const Api& api, Device gpu, std::vector<MigDevice>* devices, std::string* why) {
  if (api.device_get_max_mig_device_count == nullptr || api.device_get_mig_device_handle_by_index == nullptr) {
    *why = "this NVML has no nvmlDeviceGetMigDeviceHandleByIndex";
    return false;
  }
  unsigned max_count = 0;
  if (const Return r = api.device_get_max_mig_device_count(gpu, &max_count); r != kSuccess) {
    *why = "nvmlDeviceGetMaxMigDeviceCount: " + describe_return(api, r);
    return false;
  }
  for (unsigned i = 0; i < max_count; ++i) {
    Device mig = nullptr;
    if (api.device_get_mig_device_handle_by_index(gpu, i, &mig) == kSuccess)  // Not Found: no device at i
      devices->push_back(describe_mig_device(api, mig));
  }
  return true;
}

std::string mig_layout(const std::vector<MigDevice>& devices) {
  std::map<std::string, int> profiles;
  for (const MigDevice& d : devices) ++profiles[d.profile()];
  std::string text;
  for (const auto& [profile, n] : profiles)
    text += (text.empty() ? "" : ", ") + profile + (n > 1 ? " x" + std::to_string(n) : "");
  return text.empty() ? "none" : text;
}

bool read_nvlinks(const Api& api, Device gpu, std::vector<NvLink>* links, std::string* why) {
  if (api.device_get_nvlink_state == nullptr) {
    *why = "this NVML has no nvmlDeviceGetNvLinkState";
    return false;
  }
  bool ok = true;
  for (unsigned link = 0; link < kNvlinkMaxLinks; ++link) {
    int active = 0;
    const Return r = api.device_get_nvlink_state(gpu, link, &active);
    if (r == kSuccess) {
      links->push_back(NvLink{link, active == kEnabled});
    } else if (r != kNotSupported && r != kInvalidArgument && ok) {
      *why = "nvmlDeviceGetNvLinkState(link " + std::to_string(link) + "): " + describe_return(api, r);
      ok = false;
    }
  }
  return ok;
}

unsigned active_links(const std::vector<NvLink>& links) {
  unsigned up = 0;
  for (const NvLink& l : links) up += l.active ? 1 : 0;
  return up;
}

}  // namespace gpuscope::nvml
