// The GPU TraceSource: at begin, the environment probe and one DeviceInfo
// per GPU; then, every 1/nvml_hz seconds, one GpuSample per GPU. Runs on the
// writer thread (internal: its dlopen/dlsym calls are not recorded).
#include "gpu_source.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "chunk_builder.h"
#include "clock.h"
#include "device_info.h"
#include "device_sampler.h"
#include "environment_probe.h"
#include "exit_guard.h"
#include "gpu_source_options.h"
#include "nvml_api.h"

namespace gpuscope::gpu {
namespace {

// A sampling round may take at most this share of the period: slower NVML
// stretches the period rather than stalling every flush of the writer.
constexpr uint64_t kMaxRoundShare = 5;
// More than any node has; a misbehaving NVML's count is not trusted beyond it.
constexpr unsigned kMaxDevices = 64;

class GpuSource final : public capture::TraceSource {
 public:
  explicit GpuSource(GpuSourceOptions options)
      : options_(std::move(options)),
        period_ns_(options_.nvml_hz == 0 ? 0 : 1'000'000'000ull / options_.nvml_hz) {}

  void begin(capture::ChunkBuilder& out) override;
  void poll(uint64_t now_ns, capture::ChunkBuilder& out) override;

 private:
  void describe_devices(capture::EnvironmentProbeData& probe, capture::ChunkBuilder& out);
  void sample_all(capture::ChunkBuilder& out);

  GpuSourceOptions options_;
  uint64_t period_ns_;
  uint64_t next_due_ns_ = 0;
  nvml::Api api_;
  std::vector<std::unique_ptr<DeviceSampler>> samplers_;
};

void GpuSource::begin(capture::ChunkBuilder& out) {
  probe_started(capture::monotonic_ns());
  capture::EnvironmentProbeData probe;
  probe.device_nodes = probe_device_nodes(options_.dev_dir);
  {
    GpuCallScope scope;
    if (scope.ok()) {
      probe_driver(options_.driver_library, probe);
      if (nvml::open_nvml(options_.nvml_library, &api_, &probe.nvml_status)) describe_devices(probe, out);
    } else {
      probe.nvml_status = "not queried: the process was already exiting";
    }
  }
  probe_finished();
  out.set_probe(std::move(probe));
  next_due_ns_ = capture::monotonic_ns() + period_ns_;
}

void GpuSource::describe_devices(capture::EnvironmentProbeData& probe, capture::ChunkBuilder& out) {
  if (api_.system_get_driver_version != nullptr) {
    char version[96] = {};
    if (api_.system_get_driver_version(version, sizeof version) == nvml::kSuccess)
      probe.nvml_driver_version.assign(version, strnlen(version, sizeof version));
  }
  unsigned count = 0;
  const nvml::Return r = api_.device_get_count_v2(&count);
  if (r != nvml::kSuccess) {
    probe.nvml_status = "nvmlDeviceGetCount_v2 failed: " + nvml::describe_return(api_, r);
    return;
  }
  probe.visible_devices = static_cast<int>(count);
  for (unsigned i = 0; i < std::min(count, kMaxDevices); ++i) {
    nvml::Device device = nullptr;
    if (api_.device_get_handle_by_index_v2(i, &device) != nvml::kSuccess || device == nullptr) continue;
    capture::DeviceDescription d = describe_device(api_, device, i, options_.pci_devices_dir);
    if (period_ns_ != 0) {
      // The first sample also finds which metrics this GPU does not answer.
      auto sampler = std::make_unique<DeviceSampler>(api_, device, static_cast<uint16_t>(i));
      out.add(sampler->sample(capture::monotonic_ns()));
      for (const auto& name : sampler->unsupported())
        if (std::find(d.unsupported.begin(), d.unsupported.end(), name) == d.unsupported.end())
          d.unsupported.push_back(name);
      samplers_.push_back(std::move(sampler));
    }
    out.add_device(std::move(d));
  }
}

void GpuSource::poll(uint64_t now_ns, capture::ChunkBuilder& out) {
  if (samplers_.empty() || now_ns < next_due_ns_) return;
  rearm_exit_guard(now_ns);
  GpuCallScope scope;
  if (!scope.ok()) return;  // exiting: NVML may already be finalized
  const uint64_t started = capture::monotonic_ns();
  sample_all(out);
  const uint64_t cost = capture::monotonic_ns() - started;
  next_due_ns_ = std::max(next_due_ns_ + period_ns_, started + std::max(period_ns_, kMaxRoundShare * cost));
}

void GpuSource::sample_all(capture::ChunkBuilder& out) {
  for (auto& sampler : samplers_) out.add(sampler->sample(capture::monotonic_ns()));
}

}  // namespace

std::unique_ptr<capture::TraceSource> make_gpu_source(const GpuSourceOptions& options) {
  return std::make_unique<GpuSource>(options);
}

std::unique_ptr<capture::TraceSource> make_gpu_source(const capture::CaptureConfig& config) {
  GpuSourceOptions options;
  options.nvml_hz = config.nvml_hz;
  return make_gpu_source(options);
}

}  // namespace gpuscope::gpu
