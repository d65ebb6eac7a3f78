// The GPU TraceSource: at begin, the environment probe and one DeviceInfo
// per GPU; then, every 1/nvml_hz seconds, one GpuSample per GPU and the
// driver's per-process utilization samples taken since the previous round.
//
// All NVML and driver queries run on a thread of their own ("gpuscope-gpu"),
// never on the writer: on a real node one sampling round takes tens of
// milliseconds (nvmlDeviceGetPcieThroughput alone measures over 20 ms per
// direction) and nvmlInit can take seconds, and a writer stalled that long
// lets the thread rings of a busy program overflow (seen on an H200: a
// launch-bound sample lost 68k events). The writer only takes what the
// sampler thread has found. Like the writer, the thread is internal: its
// dlopen/dlsym calls are not recorded.
#include "gpu_source.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
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
#include "process_sampler.h"
#include "real_symbol.h"
#include "recorder.h"
#include "signal_free_thread.h"

namespace gpuscope::gpu {
namespace {

// A sampling round may take at most this share of the period: slower NVML
// stretches the period rather than keeping a core busy with NVML.
constexpr uint64_t kMaxRoundShare = 5;
// More than any node has; a misbehaving NVML's count is not trusted beyond it.
constexpr unsigned kMaxDevices = 64;
// How long the end of capture waits for a round or the probe in progress;
// longer than any healthy round, short enough that a hung NVML call cannot
// hold up the program's exit.
constexpr auto kEndWait = std::chrono::milliseconds(1000);

// What the sampler thread found and the writer has not taken yet.
struct Findings {
  std::optional<container::EnvironmentProbeData> probe;
  std::vector<container::DeviceDescription> devices;
  std::vector<fb::GpuSample> samples;
  ProcessFindings processes;
};

void append(ProcessFindings& to, ProcessFindings&& from) {
  to.samples.insert(to.samples.end(), from.samples.begin(), from.samples.end());
  for (auto& n : from.names) to.names.push_back(std::move(n));
}

class GpuSource final : public capture::TraceSource {
 public:
  explicit GpuSource(GpuSourceOptions options)
      : options_(std::move(options)),
        period_ns_(options_.nvml_hz == 0 ? 0 : 1'000'000'000ull / options_.nvml_hz) {}
  ~GpuSource() override {
    end();
    if (thread_.joinable()) thread_.join();  // only tests destroy a source
  }

  void begin(capture::ChunkBuilder& out) override;
  void poll(uint64_t now_ns, capture::ChunkBuilder& out) override;
  void end() override;

 private:
  void run();
  void probe_environment();
  void describe_devices(container::EnvironmentProbeData& probe, Findings& found);
  void start_sampling(nvml::Device device, uint16_t index, container::DeviceDescription& d, Findings& found);
  void sample_until_stopped();
  bool sleep_until(uint64_t due_ns);

  // Sampler thread only.
  GpuSourceOptions options_;
  uint64_t period_ns_;
  nvml::Api api_;
  // One GPU's samplers: its utilization, and the driver's per-process shares.
  struct GpuSamplers {
    std::unique_ptr<DeviceSampler> utilization;
    std::unique_ptr<ProcessSampler> processes;
  };
  std::vector<GpuSamplers> gpus_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // under mutex_
  bool finished_ = false;  // under mutex_
  bool sleeping_ = false;  // under mutex_: between rounds, no NVML call in flight
  Findings found_;         // under mutex_
  std::thread thread_;
};

void GpuSource::begin(capture::ChunkBuilder& /*out*/) {
  // Marked here, on the writer, so an exit that comes before the sampler
  // thread is scheduled still waits for the probe (exit_guard.h).
  probe_started(capture::monotonic_ns());
  thread_ = capture::start_signal_free_thread([this] { run(); });
}

void GpuSource::poll(uint64_t /*now_ns*/, capture::ChunkBuilder& out) {
  Findings taken;
  {
    std::lock_guard lock(mutex_);
    std::swap(taken, found_);
  }
  if (taken.probe) out.set_probe(std::move(*taken.probe));
  for (auto& d : taken.devices) out.add_device(std::move(d));
  for (const auto& sample : taken.samples) out.add(sample);
  for (const auto& sample : taken.processes.samples) out.add(sample);
  for (auto& name : taken.processes.names) out.add_gpu_process(std::move(name));
}

// A thread asleep between rounds has handed everything over: the end does
// not wait for it to wake up and leave (on a busy machine that hand-over
// alone can cost a scheduler time slice at every exit). One in a round or
// in the probe is waited for, boundedly.
void GpuSource::end() {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) return;
  stopping_ = true;
  wake_.notify_all();
  const bool done = wake_.wait_for(lock, kEndWait, [this] { return finished_ || sleeping_; });
  const bool joinable_now = done && finished_;
  lock.unlock();
  if (joinable_now) thread_.join();
}

void GpuSource::run() {
  capture::InternalScope internal;  // nothing this thread does is traced
  pthread_setname_np(pthread_self(), "gpuscope-gpu");
  probe_environment();
  sample_until_stopped();
  std::lock_guard lock(mutex_);
  finished_ = true;
  wake_.notify_all();
}

void GpuSource::probe_environment() {
  Findings found;
  container::EnvironmentProbeData probe;
  probe.device_nodes = probe_device_nodes(options_.dev_dir);
  {
    GpuCallScope scope;
    if (scope.ok()) {
      probe_driver(options_.driver_library, probe);
      if (nvml::open_nvml(options_.nvml_library, capture::real_dlsym(), &api_, &probe.nvml_status)) describe_devices(probe, found);
    } else {
      probe.nvml_status = "not queried: the process was already exiting";
    }
  }
  found.probe = std::move(probe);
  {
    std::lock_guard lock(mutex_);
    found_ = std::move(found);
  }
  probe_finished();  // after the hand-over: an exit waiting for it finds it there
}

void GpuSource::describe_devices(container::EnvironmentProbeData& probe, Findings& found) {
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
    container::DeviceDescription d = describe_device(api_, device, i, options_.pci_devices_dir);
    if (period_ns_ != 0) start_sampling(device, static_cast<uint16_t>(i), d, found);
    found.devices.push_back(std::move(d));
  }
}

// Takes each sampler's first reading, which also finds what this GPU's
// driver does not answer.
void GpuSource::start_sampling(nvml::Device device, uint16_t index, container::DeviceDescription& d,
                               Findings& found) {
  GpuSamplers gpu{std::make_unique<DeviceSampler>(api_, device, index),
                  std::make_unique<ProcessSampler>(api_, device, index, capture::monotonic_ns())};
  found.samples.push_back(gpu.utilization->sample(capture::monotonic_ns()));
  for (const auto& name : gpu.utilization->unsupported())
    if (std::find(d.unsupported.begin(), d.unsupported.end(), name) == d.unsupported.end())
      d.unsupported.push_back(name);
  // The first poll finds whether the driver answers at all. Its samples'
  // shares cover the driver's own period, which began before the sampler
  // did, so only the names are kept; the next window starts at them.
  ProcessFindings first;
  gpu.processes->poll(first);
  for (auto& name : first.names) found.processes.names.push_back(std::move(name));
  if (!gpu.processes->unsupported().empty()) d.unsupported.push_back(gpu.processes->unsupported());
  gpus_.push_back(std::move(gpu));
}

void GpuSource::sample_until_stopped() {
  if (gpus_.empty()) return;
  uint64_t due = capture::monotonic_ns() + period_ns_;
  while (sleep_until(due)) {
    const uint64_t started = capture::monotonic_ns();
    rearm_exit_guard(started);
    std::vector<fb::GpuSample> round;
    ProcessFindings processes;
    {
      GpuCallScope scope;
      if (!scope.ok()) return;  // exiting: NVML may already be finalized
      for (auto& gpu : gpus_) {
        round.push_back(gpu.utilization->sample(capture::monotonic_ns()));
        gpu.processes->poll(processes);
      }
    }
    {
      std::lock_guard lock(mutex_);
      found_.samples.insert(found_.samples.end(), round.begin(), round.end());
      append(found_.processes, std::move(processes));
    }
    const uint64_t cost = capture::monotonic_ns() - started;
    due = std::max(due + period_ns_, started + std::max(period_ns_, kMaxRoundShare * cost));
  }
}

// False once capture is ending.
bool GpuSource::sleep_until(uint64_t due_ns) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (stopping_) return false;
    const uint64_t now = capture::monotonic_ns();
    if (now >= due_ns) return true;
    sleeping_ = true;
    wake_.wait_for(lock, std::chrono::nanoseconds(due_ns - now));
    sleeping_ = false;
  }
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
