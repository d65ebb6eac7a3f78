#include "device_sampler.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

#include "device_info.h"

namespace gpuscope::gpu {
namespace {

using fb::GpuSampleField;
using nvml::Api;
using nvml::Device;
using nvml::Return;

constexpr uint8_t kUnknownPct = 0xFF;

// The sample's fields before they become the fixed-layout record.
struct Values {
  uint64_t memory_used = 0, throttle_reasons = 0;
  uint32_t pcie_tx_kbps = 0, pcie_rx_kbps = 0, power_mw = 0;
  uint16_t sm_clock_mhz = 0, memory_clock_mhz = 0;
  uint8_t temperature_c = 0, gpu_util = 0, memory_util = 0;
};

template <class T, class V> T saturate(V v) {
  return static_cast<T>(std::min<V>(v, static_cast<V>(std::numeric_limits<T>::max())));
}

template <class Fn, class... Args> Return call(Fn fn, Args... args) {
  return fn != nullptr ? fn(args...) : nvml::kFunctionNotFound;
}

// Two NVML calls that together answer one field group: both must succeed.
Return both(Return a, Return b) { return a != nvml::kSuccess ? a : b; }

struct MetricQuery {
  const char* name;  // listed in DeviceInfo.unsupported when not supported
  GpuSampleField field;
  Return (*query)(const Api&, Device, Values&);
};

// Each row writes its fields only when its query answered.
constexpr MetricQuery kMetrics[] = {
    {"nvmlDeviceGetUtilizationRates", GpuSampleField::Utilization,
     [](const Api& a, Device d, Values& v) {
       nvml::Utilization u{};
       const Return r = call(a.device_get_utilization_rates, d, &u);
       if (r == nvml::kSuccess) v.gpu_util = saturate<uint8_t>(u.gpu), v.memory_util = saturate<uint8_t>(u.memory);
       return r;
     }},
    {"nvmlDeviceGetMemoryInfo", GpuSampleField::MemoryUsed,
     [](const Api& a, Device d, Values& v) {
       nvml::Memory m{};
       const Return r = call(a.device_get_memory_info, d, &m);
       if (r == nvml::kSuccess) v.memory_used = m.used;
       return r;
     }},
    {"nvmlDeviceGetPcieThroughput", GpuSampleField::PcieThroughput,
     [](const Api& a, Device d, Values& v) {
       unsigned tx = 0, rx = 0;
       const Return r = both(call(a.device_get_pcie_throughput, d, nvml::kPcieTxBytes, &tx),
                             call(a.device_get_pcie_throughput, d, nvml::kPcieRxBytes, &rx));
       if (r == nvml::kSuccess) v.pcie_tx_kbps = tx, v.pcie_rx_kbps = rx;
       return r;
     }},
    {"nvmlDeviceGetClockInfo", GpuSampleField::Clocks,
     [](const Api& a, Device d, Values& v) {
       unsigned sm = 0, mem = 0;
       const Return r = both(call(a.device_get_clock_info, d, nvml::kClockSm, &sm),
                             call(a.device_get_clock_info, d, nvml::kClockMem, &mem));
       if (r == nvml::kSuccess) v.sm_clock_mhz = saturate<uint16_t>(sm), v.memory_clock_mhz = saturate<uint16_t>(mem);
       return r;
     }},
    {"nvmlDeviceGetCurrentClocksEventReasons", GpuSampleField::ThrottleReasons,
     [](const Api& a, Device d, Values& v) {
       unsigned long long reasons = 0;
       const Return r = call(a.device_get_clocks_event_reasons, d, &reasons);
       if (r == nvml::kSuccess) v.throttle_reasons = reasons;
       return r;
     }},
    {"nvmlDeviceGetPowerUsage", GpuSampleField::Power,
     [](const Api& a, Device d, Values& v) {
       unsigned mw = 0;
       const Return r = call(a.device_get_power_usage, d, &mw);
       if (r == nvml::kSuccess) v.power_mw = mw;
       return r;
     }},
    {"nvmlDeviceGetTemperature", GpuSampleField::Temperature,
     [](const Api& a, Device d, Values& v) {
       unsigned t = 0;
       const Return r = call(a.device_get_temperature, d, nvml::kTemperatureGpu, &t);
       if (r == nvml::kSuccess) v.temperature_c = saturate<uint8_t>(t);
       return r;
     }},
};
static_assert(std::size(kMetrics) <= 32, "DeviceSampler::skip_ has one bit per metric");

uint8_t percent(double value) { return static_cast<uint8_t>(std::lround(std::clamp(value, 0.0, 100.0))); }

}  // namespace

// Two GPM snapshots used alternately: each sample's metrics cover the time
// since the previous one.
struct DeviceSampler::Gpm {
  nvml::GpmSample snapshots[2] = {};
  int next = 0;
  bool have_previous = false;
  nvml::GpmMetricsGet request{};
};

DeviceSampler::DeviceSampler(const Api& api, Device device, uint16_t index)
    : api_(api), device_(device), index_(index) {
  start_gpm();
}

DeviceSampler::~DeviceSampler() {
  if (gpm_ == nullptr) return;
  for (const nvml::GpmSample& s : gpm_->snapshots)
    if (s.handle != nullptr) api_.gpm_sample_free(s);
}

void DeviceSampler::start_gpm() {
  const char* kName = "GPM metrics (nvmlGpmQueryDeviceSupport)";
  if (api_.gpm_sample_alloc == nullptr || api_.gpm_sample_free == nullptr || api_.gpm_sample_get == nullptr ||
      api_.gpm_metrics_get == nullptr || api_.gpm_query_device_support == nullptr) {
    unsupported_.push_back(unsupported_name(kName, nvml::kFunctionNotFound));
    return;
  }
  nvml::GpmSupport support{nvml::kGpmSupportVersion, 0};
  const Return r = api_.gpm_query_device_support(device_, &support);
  if (r != nvml::kSuccess || support.is_supported_device == 0) {
    unsupported_.push_back(kName);  // before Hopper, or a MIG instance
    return;
  }
  auto gpm = std::make_unique<Gpm>();
  for (nvml::GpmSample& s : gpm->snapshots) {
    if (api_.gpm_sample_alloc(&s) == nvml::kSuccess && s.handle != nullptr) continue;
    s.handle = nullptr;
    for (const nvml::GpmSample& allocated : gpm->snapshots)
      if (allocated.handle != nullptr) api_.gpm_sample_free(allocated);
    return;
  }
  gpm_ = std::move(gpm);
}

// Takes a snapshot; with a previous one, asks for SM and DRAM-bandwidth
// utilization between the two. Returns the valid bits it filled.
uint32_t DeviceSampler::sample_gpm(uint8_t* sm_util, uint8_t* dram_util) {
  if (gpm_ == nullptr) return 0;
  Gpm& g = *gpm_;
  const nvml::GpmSample current = g.snapshots[g.next];
  if (api_.gpm_sample_get(device_, current) != nvml::kSuccess) {
    g.have_previous = false;
    return 0;
  }
  const bool had_previous = std::exchange(g.have_previous, true);
  g.next ^= 1;
  if (!had_previous) return 0;
  nvml::GpmMetricsGet& q = g.request;
  q.version = nvml::kGpmMetricsGetVersion;
  q.num_metrics = 2;
  q.sample1 = g.snapshots[g.next];  // the older snapshot: next to be overwritten
  q.sample2 = current;
  q.metrics[0] = nvml::GpmMetric{nvml::kGpmSmUtil, 0, 0, nullptr, nullptr, nullptr};
  q.metrics[1] = nvml::GpmMetric{nvml::kGpmDramBwUtil, 0, 0, nullptr, nullptr, nullptr};
  if (api_.gpm_metrics_get(&q) != nvml::kSuccess) return 0;
  uint32_t valid = 0;
  if (q.metrics[0].nvml_return == nvml::kSuccess) {
    *sm_util = percent(q.metrics[0].value);
    valid |= static_cast<uint32_t>(GpuSampleField::SmUtilization);
  }
  if (q.metrics[1].nvml_return == nvml::kSuccess) {
    *dram_util = percent(q.metrics[1].value);
    valid |= static_cast<uint32_t>(GpuSampleField::DramBandwidth);
  }
  return valid;
}

fb::GpuSample DeviceSampler::sample(uint64_t now_ns) {
  Values v;
  uint32_t valid = 0;
  for (size_t i = 0; i < std::size(kMetrics); ++i) {
    if ((skip_ >> i & 1u) != 0) continue;
    const Return r = kMetrics[i].query(api_, device_, v);
    if (r == nvml::kSuccess) {
      valid |= static_cast<uint32_t>(kMetrics[i].field);
    } else if (r == nvml::kNotSupported || r == nvml::kFunctionNotFound) {
      skip_ |= 1u << i;  // asked once, never again
      unsupported_.push_back(unsupported_name(kMetrics[i].name, r));
    }
  }
  uint8_t sm_util = kUnknownPct, dram_util = kUnknownPct;
  valid |= sample_gpm(&sm_util, &dram_util);
  return fb::GpuSample(now_ns, v.memory_used, v.throttle_reasons, v.pcie_tx_kbps, v.pcie_rx_kbps, v.power_mw, valid,
                       v.sm_clock_mhz, v.memory_clock_mhz, index_, v.temperature_c, v.gpu_util, v.memory_util,
                       dram_util, sm_util, 0, 0);
}

}  // namespace gpuscope::gpu
