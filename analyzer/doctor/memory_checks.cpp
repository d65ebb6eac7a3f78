// Per-GPU checks of device memory health: ECC counts and row remapping
// (page retirement before Ampere).
#include <string>

#include <fmt/format.h>

#include "checks.h"

namespace gpuscope::doctor {
namespace {

struct EccCounts {
  unsigned long long volatile_corrected = 0, volatile_uncorrected = 0;
  unsigned long long aggregate_corrected = 0, aggregate_uncorrected = 0;
};

Finding judge_ecc_counts(const EccCounts& n) {
  if (n.volatile_uncorrected > 0)
    return failed(fmt::format("{} uncorrected ECC error{} since the driver loaded: the processes that hit them were "
                              "terminated",
                              n.volatile_uncorrected, n.volatile_uncorrected == 1 ? "" : "s"),
                  "drain the GPU and reset it (nvidia-smi -r) so that its rows are remapped; if errors recur, "
                  "replace it");
  if (n.aggregate_uncorrected > 0)
    return warned(fmt::format("{} uncorrected ECC error{} over the GPU's lifetime", n.aggregate_uncorrected,
                              n.aggregate_uncorrected == 1 ? "" : "s"),
                  "watch the count; a GPU whose count grows, or whose rows cannot be remapped, should be replaced");
  return passed("no uncorrected ECC errors");
}

Finding judge_ecc_mode(int current, int pending) {
  if (current != pending)
    return warned(fmt::format("ECC mode change pending: {} now, {} after the next reboot",
                              current == nvml::kEnabled ? "on" : "off", pending == nvml::kEnabled ? "on" : "off"),
                  "reboot the node (or reset the GPU) to apply it");
  if (current != nvml::kEnabled)
    return warned("ECC is disabled: memory errors go undetected and silently corrupt results",
                  "enable it (nvidia-smi -e 1) and reboot");
  return passed("ECC on");
}

}  // namespace

Finding check_ecc(const NodeProbe& probe, const Gpu& gpu) {
  const nvml::Api& api = probe.api;
  int current = 0, pending = 0;
  EccCounts n;
  NvmlReads read(probe);
  read("nvmlDeviceGetEccMode", api.device_get_ecc_mode, gpu.handle, &current, &pending);
  const auto& total = api.device_get_total_ecc_errors;
  read("nvmlDeviceGetTotalEccErrors", total, gpu.handle, nvml::kEccCorrected, nvml::kVolatileEcc, &n.volatile_corrected);
  read("nvmlDeviceGetTotalEccErrors", total, gpu.handle, nvml::kEccUncorrected, nvml::kVolatileEcc,
       &n.volatile_uncorrected);
  read("nvmlDeviceGetTotalEccErrors", total, gpu.handle, nvml::kEccCorrected, nvml::kAggregateEcc,
       &n.aggregate_corrected);
  read("nvmlDeviceGetTotalEccErrors", total, gpu.handle, nvml::kEccUncorrected, nvml::kAggregateEcc,
       &n.aggregate_uncorrected);
  if (!read.ok()) {
    Finding f = read.not_checked();
    if (read.result() == nvml::kNotSupported) f.summary += " (this GPU has no ECC memory)";
    return f;
  }
  Finding f = worse(judge_ecc_counts(n), judge_ecc_mode(current, pending));
  f.evidence.insert(f.evidence.begin(),
                    fmt::format("volatile: {} corrected, {} uncorrected; aggregate: {} corrected, {} uncorrected "
                                "(corrected errors are reported, not judged)",
                                n.volatile_corrected, n.volatile_uncorrected, n.aggregate_corrected,
                                n.aggregate_uncorrected));
  return f;
}

Finding check_row_remapping(const NodeProbe& probe, const Gpu& gpu) {
  const nvml::Api& api = probe.api;
  unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  NvmlReads rows(probe);
  if (!rows("nvmlDeviceGetRemappedRows", api.device_get_remapped_rows, gpu.handle, &corrected, &uncorrected, &pending,
            &failure)) {
    // Before Ampere, bad memory is retired by page instead.
    int pages_pending = 0;
    NvmlReads pages(probe);
    if (!pages("nvmlDeviceGetRetiredPagesPendingStatus", api.device_get_retired_pages_pending_status, gpu.handle,
               &pages_pending))
      return not_checked(rows.not_checked().summary + "; " + pages.not_checked().summary);
    return pages_pending == nvml::kEnabled
               ? failed("a page retirement is pending", "drain the GPU and reset it (nvidia-smi -r) or reboot")
               : passed("no page retirement pending");
  }
  Finding f = failure != 0 ? failed("row remapping failed: the GPU ran out of spare rows or could not remap one",
                                    "drain the GPU and replace it (RMA)")
              : pending != 0 ? failed("a row remap is pending: until the GPU is reset, the bad row stays in use",
                                      "drain the GPU and reset it (nvidia-smi -r) or reboot")
                             : passed("no row remap pending");
  f.evidence.push_back(fmt::format("rows remapped: {} for correctable errors, {} for uncorrectable; pending {}, "
                                   "failure {}",
                                   corrected, uncorrected, pending != 0 ? "yes" : "no", failure != 0 ? "yes" : "no"));
  return f;
}

}  // namespace gpuscope::doctor
