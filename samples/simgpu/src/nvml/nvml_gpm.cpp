// GPM (GPU Performance Monitoring, Hopper and later) in simgpu's NVML: the
// real API's way to ask for SM utilization and DRAM bandwidth utilization.
// A sample snapshots the device's cumulative activity; nvmlGpmMetricsGet
// divides the difference of two samples by the time between them.
//
// Modeled metrics: GRAPHICS_UTIL (any kernel resident), SM_UTIL (share of SMs
// the resident grids cover), FP32_UTIL (compute-class kernels only),
// DRAM_BW_UTIL (modeled DRAM bytes / peak bandwidth), PCIE_TX/RX_PER_SEC.
// Other metric ids answer NVML_ERROR_NOT_SUPPORTED.
#include <new>

#include "../common/clock.hpp"
#include "nvml_state.hpp"

using simgpu::ActivityTotals;
using simgpu::nvml::State;

struct nvmlGpmSample_st {
  bool filled = false;
  unsigned device = 0;
  double dram_gbps = 0;
  int64_t time_ns = 0;
  ActivityTotals kernels, compute, dram, h2d, d2h;
};

namespace {

constexpr unsigned kCompute = simgpu::activity_bit(simgpu::Activity::KernelCompute);
constexpr unsigned kH2D = simgpu::activity_bit(simgpu::Activity::CopyH2D);
constexpr unsigned kD2H = simgpu::activity_bit(simgpu::Activity::CopyD2H);
constexpr double kMiB = 1024.0 * 1024.0;

struct MetricInfo {
  unsigned id;
  const char *short_name, *long_name, *unit;
};
constexpr MetricInfo kMetrics[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, "gr_util", "graphics utilization", "%"},
    {NVML_GPM_METRIC_SM_UTIL, "sm_util", "SM utilization", "%"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, "dram_bw_util", "DRAM bandwidth utilization", "%"},
    {NVML_GPM_METRIC_FP32_UTIL, "fp32_util", "FP32 utilization", "%"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, "pcie_tx", "PCIe TX", "MiB/s"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, "pcie_rx", "PCIe RX", "MiB/s"}};

// The value of a supported metric between samples a and b (dt > 0).
bool metric_value(unsigned id, const nvmlGpmSample_st& a, const nvmlGpmSample_st& b, double* out) {
  const double dt = static_cast<double>(b.time_ns - a.time_ns);
  switch (id) {
    case NVML_GPM_METRIC_GRAPHICS_UTIL: *out = 100 * (b.kernels.busy_ns - a.kernels.busy_ns) / dt; return true;
    case NVML_GPM_METRIC_SM_UTIL: *out = 100 * (b.kernels.sm_busy_ns - a.kernels.sm_busy_ns) / dt; return true;
    case NVML_GPM_METRIC_FP32_UTIL: *out = 100 * (b.compute.sm_busy_ns - a.compute.sm_busy_ns) / dt; return true;
    case NVML_GPM_METRIC_DRAM_BW_UTIL: *out = 100 * (b.dram.bytes - a.dram.bytes) / (dt * b.dram_gbps); return true;
    case NVML_GPM_METRIC_PCIE_TX_PER_SEC: *out = (b.d2h.bytes - a.d2h.bytes) / kMiB / (dt / 1e9); return true;
    case NVML_GPM_METRIC_PCIE_RX_PER_SEC: *out = (b.h2d.bytes - a.h2d.bytes) / kMiB / (dt / 1e9); return true;
    default: return false;
  }
}

void describe(nvmlGpmMetric_t& m) {
  m.metricInfo = {nullptr, nullptr, nullptr};
  for (const MetricInfo& info : kMetrics) {
    if (info.id != m.metricId) continue;
    m.metricInfo = {const_cast<char*>(info.short_name), const_cast<char*>(info.long_name), const_cast<char*>(info.unit)};
  }
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* support) {
  return simgpu::nvml::with_device(device, [&](const nvmlDevice_st& d, const State&) {
    if (!support) return NVML_ERROR_INVALID_ARGUMENT;
    if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    support->isSupportedDevice = d.desc->cc_major >= 9 ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  if (!simgpu::nvml::state()) return NVML_ERROR_UNINITIALIZED;
  if (!sample) return NVML_ERROR_INVALID_ARGUMENT;
  sample->handle = new (std::nothrow) nvmlGpmSample_st;
  return sample->handle ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  if (!sample.handle) return NVML_ERROR_INVALID_ARGUMENT;
  delete sample.handle;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  return simgpu::nvml::with_device(device, [&](const nvmlDevice_st& d, const State& s) {
    if (!sample.handle) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.desc->cc_major < 9) return NVML_ERROR_NOT_SUPPORTED;
    nvmlGpmSample_st& out = *sample.handle;
    const int dev = static_cast<int>(d.index);
    out.time_ns = simgpu::now_ns();
    out.kernels = s.shared->totals(dev, simgpu::kKernelActivities, out.time_ns);
    out.compute = s.shared->totals(dev, kCompute, out.time_ns);
    out.dram = s.shared->totals(dev, simgpu::kAllActivities, out.time_ns);
    out.h2d = s.shared->totals(dev, kH2D, out.time_ns);
    out.d2h = s.shared->totals(dev, kD2H, out.time_ns);
    out.device = d.index;
    out.dram_gbps = d.desc->dram_gbps;
    out.filled = true;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* request) {
  if (!simgpu::nvml::state()) return NVML_ERROR_UNINITIALIZED;
  if (!request) return NVML_ERROR_INVALID_ARGUMENT;
  if (request->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const nvmlGpmSample_st* a = request->sample1.handle;
  const nvmlGpmSample_st* b = request->sample2.handle;
  if (!a || !b || !a->filled || !b->filled || a->device != b->device || b->time_ns <= a->time_ns ||
      request->numMetrics > NVML_GPM_METRIC_MAX)
    return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < request->numMetrics; ++i) {
    nvmlGpmMetric_t& m = request->metrics[i];
    describe(m);
    m.nvmlReturn = metric_value(m.metricId, *a, *b, &m.value) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
    if (m.nvmlReturn == NVML_SUCCESS && m.value < 0) m.value = 0;
  }
  return NVML_SUCCESS;
}

}  // extern "C"
