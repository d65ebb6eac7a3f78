// Who else gets the GPU: MIG partitioning, MPS, and other processes
// holding a compute context.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checks.h"

namespace gpuscope::doctor {
namespace {

// NVML_VALUE_NOT_AVAILABLE: the memory of a process NVML may not show
// (another container's, without privileges).
constexpr unsigned long long kValueNotAvailable = ~0ull;

// The process's command name, or why it is not known here: a process of
// another container has a pid of another PID namespace.
std::string process_name(unsigned pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  if (comm && std::getline(comm, name) && !name.empty()) return name;
  return "not visible here (another PID namespace?)";
}

using ProcessQuery = nvml::Return (*)(nvml::Device, unsigned*, nvml::ProcessInfo*);

// The GPU's compute processes (or, with the MPS query, its MPS clients).
std::vector<nvml::ProcessInfo> compute_processes(NvmlReads& read, const Gpu& gpu, ProcessQuery query,
                                                 const char* function = "nvmlDeviceGetComputeRunningProcesses_v3") {
  std::vector<nvml::ProcessInfo> infos(64);
  unsigned count = 0;
  nvml::Return r = nvml::kFunctionNotFound;
  // Insufficient Size answers how many there are; more may start before the next call.
  for (int attempt = 0; attempt < 3 && query != nullptr; ++attempt) {
    count = static_cast<unsigned>(infos.size());
    r = query(gpu.handle, &count, infos.data());
    if (r != nvml::kInsufficientSize) break;
    infos.resize(count + 8);
  }
  if (!read.record(function, r)) return {};
  infos.resize(count);
  return infos;
}

std::string memory_text(unsigned long long bytes) {
  return bytes == kValueNotAvailable ? "memory not available" : fmt::format("{:.0f} MiB", bytes / 1048576.0);
}

// Where MPS clients find the control daemon: CUDA_MPS_PIPE_DIRECTORY, else
// /tmp/nvidia-mps (NVIDIA's MPS documentation, Environment Variables).
std::string mps_pipe_directory() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp/nvidia-mps";
}

// MPS clients on each GPU NVML can list ("GPU 0: pid 4417 (name): 2048 MiB").
std::vector<std::string> mps_clients(const NodeProbe& probe, std::string* not_listed) {
  std::vector<std::string> clients;
  for (const Gpu& gpu : probe.gpus) {
    NvmlReads read(probe);
    for (const nvml::ProcessInfo& p : compute_processes(read, gpu, probe.api.device_get_mps_compute_running_processes_v3,
                                                        "nvmlDeviceGetMPSComputeRunningProcesses_v3"))
      clients.push_back(fmt::format("GPU {}: MPS client pid {} ({}): {}", gpu.index, p.pid, process_name(p.pid),
                                    memory_text(p.used_gpu_memory)));
    if (!read.ok() && not_listed->empty()) *not_listed = read.not_checked().summary;
  }
  return clients;
}

}  // namespace

Finding check_mps(const NodeProbe& probe) {
  const std::string pipe = mps_pipe_directory() + "/control";
  struct stat st{};
  const bool daemon = stat(pipe.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  std::string not_listed = probe.nvml_ok ? "" : "no NVML: " + probe.nvml_status;
  const std::vector<std::string> clients = probe.nvml_ok ? mps_clients(probe, &not_listed) : std::vector<std::string>{};
  const char* share = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  Finding f = passed("no MPS: no control daemon pipe and no MPS client on any GPU");
  if (daemon || !clients.empty()) {
    f = warned(fmt::format("MPS is in use ({}{}{}): CUDA processes here share the GPUs' SMs with the other MPS "
                           "clients, and their kernels overlap instead of time-slicing",
                           daemon ? "control daemon at " + pipe : "", daemon && !clients.empty() ? ", " : "",
                           clients.empty() ? "" : fmt::format("{} MPS client{}", clients.size(), clients.size() == 1 ? "" : "s")),
               "if the workload expects a GPU of its own, run it where MPS is off (echo quit | "
               "nvidia-cuda-mps-control stops the daemon); under MPS, size its share with "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  }
  f.evidence.push_back(fmt::format("{}: {}", pipe, daemon ? "a named pipe: the MPS control daemon's" : "absent"));
  f.evidence.insert(f.evidence.end(), clients.begin(), clients.end());
  if (!not_listed.empty()) f.evidence.push_back("MPS clients not listed: " + not_listed);
  if (share != nullptr) f.evidence.push_back(fmt::format("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={}: this process's share of "
                                                         "the SMs under MPS", share));
  return f;
}

namespace {

// Whether a CUDA_VISIBLE_DEVICES entry names this MIG device: "MIG-<uuid>"
// (a prefix will do, as for GPUs), or the older "MIG-GPU-<uuid>/<gi>/<ci>".
bool names_slice(const std::string& entry, const Gpu& gpu, const nvml::MigDevice& slice) {
  const size_t first_slash = entry.find('/');
  if (entry.compare(0, 8, "MIG-GPU-") == 0 && first_slash != std::string::npos) {
    const size_t second_slash = entry.find('/', first_slash + 1);
    return entry.substr(4, first_slash - 4) == gpu.uuid && second_slash != std::string::npos &&
           entry.substr(first_slash + 1, second_slash - first_slash - 1) == std::to_string(slice.gpu_instance) &&
           entry.substr(second_slash + 1) == std::to_string(slice.compute_instance);
  }
  return entry.size() > 4 && slice.uuid.compare(0, entry.size(), entry) == 0;
}

std::string describe_slice(const nvml::MigDevice& s) {
  std::string text = fmt::format("MIG {} (GPU instance {}, compute instance {})", s.profile(), s.gpu_instance,
                                 s.compute_instance);
  if (s.sm_count > 0) text += fmt::format(": {} SMs, {:.1f} GiB", s.sm_count, s.memory_mib / 1024.0);
  return text;
}

// A GPU in MIG mode: which MIG devices it has and whether this process lands
// on one of them. MIG is worth a warning either way (a slice, not the GPU);
// MIG on without any MIG device leaves the GPU unusable for CUDA.
Finding judge_mig_devices(const NodeProbe& probe, const Gpu& gpu) {
  const std::string fix =
      "if the workload expects the whole GPU, disable MIG (nvidia-smi -mig 0) or schedule it on a MIG device sized "
      "for it";
  if (!gpu.mig_not_listed.empty()) {
    Finding f = warned("MIG is enabled: CUDA processes get a MIG device (a share of the SMs and memory), not the "
                       "whole GPU, and NVML reports no utilization for it",
                       fix);
    f.evidence.push_back("MIG devices not listed: " + gpu.mig_not_listed);
    return f;
  }
  if (gpu.mig_devices.empty())
    return failed("MIG is enabled but no MIG device exists on this GPU: CUDA finds no device to run on here",
                  "create GPU and compute instances (nvidia-smi mig -cgi <profiles> -C) or disable MIG "
                  "(nvidia-smi -mig 0)");
  const MigLanding landing = mig_landing(probe);
  std::string where = "this process lands on none of them (" + landing.why + ")";
  if (landing.gpu == &gpu) where = "this process lands on " + describe_slice(*landing.slice);
  else if (landing.gpu != nullptr) where = fmt::format("this process lands on GPU {}'s {}", landing.gpu->index,
                                                      describe_slice(*landing.slice));
  Finding f = warned(fmt::format("MIG is enabled with {} MIG device{}; {}; NVML reports no utilization for it",
                                 gpu.mig_devices.size(), gpu.mig_devices.size() == 1 ? "" : "s", where),
                     fix);
  for (const nvml::MigDevice& slice : gpu.mig_devices) f.evidence.push_back(describe_slice(slice) + ", " + slice.uuid);
  if (landing.gpu == &gpu) f.evidence.push_back("lands on " + landing.slice->uuid + ": " + landing.why);
  return f;
}

}  // namespace

MigLanding mig_landing(const NodeProbe& probe) {
  const VisibleDevices visible = visible_devices(probe.gpus);
  if (!visible.mig_instances.empty()) {
    const std::string& entry = visible.mig_instances.front();
    for (const Gpu& gpu : probe.gpus)
      for (const nvml::MigDevice& slice : gpu.mig_devices)
        if (names_slice(entry, gpu, slice)) return {&gpu, &slice, "CUDA_VISIBLE_DEVICES names it first"};
    return {nullptr, nullptr, "CUDA_VISIBLE_DEVICES names " + entry + ", which is no MIG device of this node"};
  }
  for (const Gpu* gpu : visible.gpus)
    if (gpu->mig_enabled && !gpu->mig_devices.empty())
      return {gpu, &gpu->mig_devices.front(), "the first MIG device of the first visible GPU in MIG mode"};
  return {nullptr, nullptr, "no visible GPU in MIG mode has a MIG device"};
}

Finding check_mig(const NodeProbe& probe, const Gpu& gpu) {
  unsigned current = 0, pending = 0;
  NvmlReads read(probe);
  if (!read("nvmlDeviceGetMigMode", probe.api.device_get_mig_mode, gpu.handle, &current, &pending)) {
    if (read.result() == nvml::kNotSupported) return passed("this GPU has no MIG mode: processes get the whole GPU");
    return read.not_checked();
  }
  Finding f = current != 0 ? judge_mig_devices(probe, gpu) : passed("MIG disabled: processes get the whole GPU");
  if (current != pending)
    f = worse(warned(fmt::format("MIG mode change pending: {} now, {} after a GPU reset", current ? "on" : "off",
                                 pending ? "on" : "off"),
                     "reset the GPU (nvidia-smi -r) to apply it, or revert it"),
              f);
  f.evidence.insert(f.evidence.begin(), fmt::format("MIG mode current {}, pending {}", current, pending));
  return f;
}

Finding check_tenancy(const NodeProbe& probe, const Gpu& gpu) {
  NvmlReads read(probe);
  const std::vector<nvml::ProcessInfo> processes =
      compute_processes(read, gpu, probe.api.device_get_compute_running_processes_v3);
  if (!read.ok()) return read.not_checked();
  std::vector<std::string> others;
  unsigned long long other_bytes = 0;
  for (const nvml::ProcessInfo& p : processes) {
    if (p.pid == static_cast<unsigned>(getpid())) continue;
    others.push_back(fmt::format("pid {} ({}): {}", p.pid, process_name(p.pid), memory_text(p.used_gpu_memory)));
    if (p.used_gpu_memory != kValueNotAvailable) other_bytes += p.used_gpu_memory;
  }
  if (others.empty()) return passed("no other process holds a compute context on this GPU");
  Finding f = warned(fmt::format("{} other process{} on this GPU, holding {}", others.size(),
                                 others.size() == 1 ? "" : "es", memory_text(other_bytes)),
                     "without MIG or MPS the GPU time-slices between processes: move the workload to a GPU of its "
                     "own, or partition this one (MIG) if sharing is intended");
  f.evidence = std::move(others);
  return f;
}

}  // namespace gpuscope::doctor
