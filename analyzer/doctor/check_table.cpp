// The checks, as a table: name, scope, the rule each applies and where that
// rule comes from (docs/doctor.md repeats them), and the function. Running
// them is one loop; degrading to "not checked" is done here once, not in
// every check.
#include <unistd.h>

#include <algorithm>
#include <exception>

#include "checks.h"

namespace gpuscope::doctor {
namespace {

// Checks that run only when asked for.
enum class Asked { Always, Baseline, Canary };

struct CheckSpec {
  const char* name;
  bool needs_nvml;
  Asked asked;
  const char* threshold;
  const char* source;
  Finding (*node_check)(const NodeProbe&);             // one of these two
  Finding (*gpu_check)(const NodeProbe&, const Gpu&);
};

constexpr CheckSpec kChecks[] = {
    {"driver", false, Asked::Always,
     "fail when libnvidia-ml.so.1 cannot be loaded or initialized, when the driver sees no GPU, or when it "
     "cannot open a GPU it counts",
     "NVML API reference: nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2", check_driver, nullptr},
    {"devices", true, Asked::Always,
     "fail when CUDA_VISIBLE_DEVICES hides every GPU or names MIG devices of which the first is no MIG device "
     "here, or when /dev/nvidiactl, /dev/nvidia-uvm or a visible GPU's /dev/nvidiaN is missing, not readable and "
     "writable, or refused at open() (a container's device cgroup); warn when CUDA_VISIBLE_DEVICES holds an entry "
     "that names no GPU (CUDA ignores it and every entry after it)",
     "CUDA Programming Guide, CUDA Environment Variables (CUDA_VISIBLE_DEVICES); NVIDIA driver README, device files",
     check_devices, nullptr},
    {"cuda_runtime", false, Asked::Always,
     "fail when the CUDA runtime finds no driver, or the driver's CUDA major version is older than the runtime's; "
     "warn when only its minor version is older",
     "CUDA Compatibility guide (docs.nvidia.com/deploy/cuda-compatibility): minor version compatibility, "
     "forward compatibility",
     check_cuda_runtime, nullptr},
    {"kernel_log", false, Asked::Always,
     "fail on an Xid whose remedy is a GPU reset, reboot or service (48, 62, 64, 74, 79, 94, 95, 119, 120), on an "
     "NVRM message that the driver could not use a GPU, or on an uncorrected PCIe AER error; warn on any other "
     "Xid (13, 31, 43, 45, 61, 63, 92, and codes gpuscope does not name) and on corrected PCIe AER errors",
     "NVIDIA Xid Errors and its Xid catalog (docs.nvidia.com/deploy/xid-errors); Linux PCI Express Advanced Error "
     "Reporting (Documentation/PCI/pcieaer-howto.rst): corrected errors are recovered by the hardware, "
     "uncorrected ones are not",
     check_kernel_log, nullptr},
    {"host_pressure", false, Asked::Always,
     "fail when tasks waited for a CPU, or for I/O, 50% or more of the last 10 s (PSI some avg10); warn from 10%; "
     "without PSI, warn when the CPUs were 95% busy or more, or 20% or more of CPU time was iowait, over the window",
     "Linux PSI (Documentation/accounting/psi.rst) and /proc/stat (Documentation/filesystems/proc.rst); the "
     "percentages are gpuscope's own (docs/doctor.md: no published limit)",
     check_host_pressure, nullptr},
    {"clocksource", false, Asked::Always,
     "warn when the kernel's clocksource is not one the vDSO reads in user space (tsc, kvm-clock, "
     "hyperv_clocksource_tsc_page, arch_sys_counter), or when a clock read measured here costs 300 ns or more",
     "Linux clocksource sysfs (Documentation/admin-guide/kernel-parameters: clocksource=) and vdso(7): "
     "clock_gettime without a system call needs a clocksource the vDSO can read; the 300 ns bar is gpuscope's own "
     "(a vDSO read costs 15-50 ns, a system call several hundred)",
     check_clocksource, nullptr},
    {"mps", false, Asked::Always,
     "warn when MPS is in use: the MPS control daemon's pipe exists (CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps) "
     "or NVML lists MPS clients on a GPU",
     "NVIDIA Multi-Process Service documentation (docs.nvidia.com/deploy/mps): the pipe directory, "
     "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; NVML nvmlDeviceGetMPSComputeRunningProcesses_v3",
     check_mps, nullptr},
    {"baseline", false, Asked::Baseline,
     "fail when a GPU of the baseline is missing or is another model; warn when any other fact differs: kernel, "
     "driver, CUDA driver and runtime versions, GPU count, VBIOS, memory, PCIe link capability, MIG mode, "
     "persistence mode, power limit, applications and maximum clocks (UUIDs, bus ids and library paths are "
     "recorded, not compared)",
     "gpuscope's own: a known-good node's `gpuscope doctor --json` (docs/doctor.md, Baselines)", check_baseline,
     nullptr},
    {"pcie_link", true, Asked::Always,
     "fail when the link runs narrower than its maximum width, or at a lower generation while the GPU is busy; "
     "warn when it runs at a lower generation while idle, or the slot caps the GPU's generation",
     "PCI-SIG lane rates per generation; NVML nvmlDeviceGetCurr/MaxPcieLinkGeneration/Width; nvidia-smi -q "
     "(the link may train down when idle)",
     nullptr, check_pcie_link},
    {"clocks", true, Asked::Always,
     "fail on a hardware slowdown, hardware thermal slowdown or hardware power brake clocks event; warn on "
     "software thermal slowdown or software power cap",
     "NVML API reference, Clocks Event Reasons (nvmlClocksEventReason*); nvidia-smi -q -d PERFORMANCE", nullptr,
     check_clocks},
    {"power", true, Asked::Always, "warn when the enforced power limit is below the board's default limit",
     "NVML nvmlDeviceGetEnforcedPowerLimit and nvmlDeviceGetPowerManagementDefaultLimit; nvidia-smi -pl", nullptr,
     check_power},
    {"persistence_mode", true, Asked::Always, "warn when persistence mode is off",
     "NVIDIA Driver Persistence (docs.nvidia.com/deploy/driver-persistence)", nullptr, check_persistence_mode},
    {"ecc", true, Asked::Always,
     "fail on volatile (since driver load) uncorrected ECC errors; warn on aggregate (lifetime) uncorrected "
     "errors, ECC disabled, or an ECC mode change pending a reboot",
     "NVIDIA GPU Memory Error Management (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt); NVML "
     "nvmlDeviceGetTotalEccErrors",
     nullptr, check_ecc},
    {"row_remapping", true, Asked::Always,
     "fail when a row remap or page retirement is pending (needs a GPU reset) or row remapping failed",
     "NVIDIA GPU Memory Error Management (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt); NVML "
     "nvmlDeviceGetRemappedRows, nvmlDeviceGetRetiredPagesPendingStatus",
     nullptr, check_row_remapping},
    {"mig", true, Asked::Always,
     "fail when MIG is enabled and no MIG device exists (CUDA finds nothing to run on); warn when MIG is enabled "
     "(naming the MIG device this process lands on) or a MIG mode change is pending a GPU reset",
     "NVIDIA Multi-Instance GPU User Guide (docs.nvidia.com/datacenter/tesla/mig-user-guide): MIG device names, "
     "CUDA device enumeration (one MIG device per process); NVML nvmlDeviceGetMigDeviceHandleByIndex",
     nullptr, check_mig},
    {"tenancy", true, Asked::Always, "warn when another process holds a compute context on the GPU",
     "NVML nvmlDeviceGetComputeRunningProcesses_v3", nullptr, check_tenancy},
    {"topology", true, Asked::Always, "warn when none of the CPUs this process may run on is near the GPU (its NUMA node's CPUs)",
     "NVML nvmlDeviceGetCpuAffinity and nvmlDeviceGetMemoryAffinity, else sysfs local_cpulist and numa_node (the CPU "
     "and NUMA affinity of nvidia-smi topo -m); sched_getaffinity(2), which taskset and the cgroup cpuset narrow",
     nullptr, check_topology},
    {"nvlink", true, Asked::Always,
     "warn when some of a GPU's NVLinks are down while others are up; a GPU whose links are all down (a PCIe card "
     "without its bridge) passes, saying GPU-to-GPU copies take PCIe; error counters are shown, not judged",
     "NVML nvmlDeviceGetNvLinkState and nvmlDeviceGetNvLinkErrorCounter; nvidia-smi nvlink -s / -e; NVIDIA "
     "publishes no error-counter threshold, so none is applied",
     nullptr, check_nvlink},
    {"canary", true, Asked::Canary,
     "fail when pinned copies (the slower direction, best of 5 x 64 MiB) reach under 30% of the PCIe link's payload "
     "rate at its maximum generation and width, warn under 60%; warn when an empty kernel's launch and "
     "synchronization takes over 50 us (median of 200)",
     "PCI-SIG lane rates (payload after 128b/130b encoding); a healthy x16 GPU's pinned copies reach 80-90% of them "
     "(NVIDIA's bandwidthTest, nvbandwidth); the 30/60% and 50 us bars are gpuscope's own (docs/doctor.md)",
     nullptr, check_canary},
};

CheckResult result_of(const CheckSpec& spec, int gpu, Finding finding) {
  return CheckResult{spec.name, gpu, spec.threshold, spec.source, std::move(finding)};
}

// A check that throws says so instead of ending the command.
template <class Run> Finding guarded(Run run) {
  try {
    return run();
  } catch (const std::exception& e) {
    return not_checked(std::string("the check stopped: ") + e.what());
  }
}

void run_check(const CheckSpec& spec, const NodeProbe& probe, std::vector<CheckResult>& out) {
  if ((spec.asked == Asked::Baseline && !probe.options.baseline) || (spec.asked == Asked::Canary && !probe.options.canary))
    return;
  if (spec.needs_nvml && !probe.nvml_ok) {
    out.push_back(result_of(spec, -1, not_checked("no NVML: " + probe.nvml_status)));
  } else if (spec.node_check != nullptr) {
    out.push_back(result_of(spec, -1, guarded([&] { return spec.node_check(probe); })));
  } else if (probe.gpus.empty()) {
    out.push_back(result_of(spec, -1, not_checked("the driver sees no GPU")));
  } else {
    for (const Gpu& gpu : probe.gpus)
      out.push_back(result_of(spec, static_cast<int>(gpu.index), guarded([&] { return spec.gpu_check(probe, gpu); })));
  }
}

Finding finding_of(CheckState state, std::string summary, std::string fix) {
  Finding f;
  f.state = state;
  f.summary = std::move(summary);
  f.fix = std::move(fix);
  return f;
}

}  // namespace

const char* state_name(CheckState state) {
  switch (state) {
    case CheckState::Fail: return "fail";
    case CheckState::Warn: return "warn";
    case CheckState::NotChecked: return "not_checked";
    case CheckState::Pass: return "pass";
  }
  return "?";
}

Finding passed(std::string summary) { return finding_of(CheckState::Pass, std::move(summary), ""); }
Finding warned(std::string summary, std::string fix) { return finding_of(CheckState::Warn, std::move(summary), std::move(fix)); }
Finding failed(std::string summary, std::string fix) { return finding_of(CheckState::Fail, std::move(summary), std::move(fix)); }
Finding not_checked(std::string why) { return finding_of(CheckState::NotChecked, std::move(why), ""); }

Finding worse(Finding a, Finding b) {
  Finding& keep = b.state < a.state ? b : a;
  const Finding& other = &keep == &a ? b : a;
  keep.evidence.insert(keep.evidence.end(), other.evidence.begin(), other.evidence.end());
  return std::move(keep);
}

DoctorReport run_doctor(const DoctorOptions& options) {
  DoctorReport report;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) report.host = host;
  const NodeProbe probe = probe_node(options);
  report.simulated = std::any_of(probe.gpus.begin(), probe.gpus.end(),
                                 [](const Gpu& g) { return g.name.find("(simulated)") != std::string::npos; });
  for (const CheckSpec& spec : kChecks) run_check(spec, probe, report.results);
  report.facts = probe.facts;
  return report;
}

int exit_status(const DoctorReport& report) {
  const auto any = [&](CheckState s) {
    return std::any_of(report.results.begin(), report.results.end(),
                       [s](const CheckResult& r) { return r.finding.state == s; });
  };
  return any(CheckState::Fail) ? 1 : any(CheckState::Warn) ? 3 : 0;
}

std::vector<CheckResult> by_severity(const DoctorReport& report) {
  std::vector<CheckResult> sorted = report.results;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const CheckResult& a, const CheckResult& b) { return a.finding.state < b.finding.state; });
  return sorted;
}

}  // namespace gpuscope::doctor
