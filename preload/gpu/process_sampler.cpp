#include "process_sampler.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "clock.h"
#include "device_info.h"

namespace gpuscope::gpu {
namespace {

// More processes than one GPU holds in practice; a larger count from a
// misbehaving library is not trusted.
constexpr unsigned kMaxProcesses = 1024;
// A driver stamp this far from the poll is not on the realtime clock we read.
constexpr uint64_t kStampSlackNs = 10'000'000'000ull;
constexpr uint8_t kStampFromPoll = 1;

uint8_t percent(unsigned value) { return static_cast<uint8_t>(std::min(value, 100u)); }

uint32_t window(uint64_t from, uint64_t to) {
  return static_cast<uint32_t>(std::min<uint64_t>(to > from ? to - from : 0, std::numeric_limits<uint32_t>::max()));
}

}  // namespace

ProcessSampler::ProcessSampler(const nvml::Api& api, nvml::Device device, uint16_t index, uint64_t start_ns)
    : api_(api), device_(device), index_(index), previous_ns_(start_ns) {
  const uint64_t mono = capture::monotonic_ns(), real = capture::realtime_ns();
  last_seen_us_ = (real - std::min(real, mono - std::min(mono, start_ns))) / 1000;
  if (api_.device_get_process_utilization == nullptr)
    unsupported_ = unsupported_name("nvmlDeviceGetProcessUtilization", nvml::kFunctionNotFound);
}

void ProcessSampler::poll(ProcessFindings& out) {
  if (!unsupported_.empty()) return;
  unsigned count = 0;
  nvml::Return r = api_.device_get_process_utilization(device_, nullptr, &count, last_seen_us_);
  if (r == nvml::kInsufficientSize || r == nvml::kSuccess) {
    buffer_.resize(std::clamp(count, 1u, kMaxProcesses));
    count = static_cast<unsigned>(buffer_.size());
    r = api_.device_get_process_utilization(device_, buffer_.data(), &count, last_seen_us_);
  }
  if (r == nvml::kNotSupported || r == nvml::kFunctionNotFound) {
    unsupported_ = unsupported_name("nvmlDeviceGetProcessUtilization", r);
    return;
  }
  if (r != nvml::kSuccess) return;  // kNotFound: nothing new since the last poll
  const uint64_t mono_now = capture::monotonic_ns(), real_now = capture::realtime_ns();
  const auto taken = buffer_.begin() + std::min<size_t>(count, buffer_.size());
  // Oldest first, so each stamp's window starts at the one before it.
  std::sort(buffer_.begin(), taken, [](const auto& a, const auto& b) { return a.timestamp_us < b.timestamp_us; });
  const unsigned long long asked = last_seen_us_;
  for (auto it = buffer_.begin(); it != taken; ++it)
    if (it->timestamp_us > asked) add_sample(*it, mono_now, real_now, out);  // a driver may ignore lastSeenTimeStamp
}

void ProcessSampler::add_sample(const nvml::ProcessUtilizationSample& s, uint64_t mono_now, uint64_t real_now,
                                ProcessFindings& out) {
  const uint64_t stamp_ns = s.timestamp_us * 1000;
  const uint64_t age = real_now > stamp_ns ? real_now - stamp_ns : 0;
  uint64_t at = mono_now - std::min(mono_now, age);
  uint8_t flags = 0;
  if (stamp_ns > real_now + kStampSlackNs || age > kStampSlackNs || at < previous_ns_) {
    at = std::max(mono_now, previous_ns_);
    flags |= kStampFromPoll;
  }
  const uint32_t covered = window(previous_ns_, at);
  // Samples of one driver tick share a stamp and a window.
  const bool same_tick = out.samples.size() > 0 && out.samples.back().start_ns() == at &&
                         out.samples.back().device() == index_;
  out.samples.emplace_back(at, same_tick ? out.samples.back().window_ns() : covered, s.pid, index_,
                           percent(s.sm_util), percent(s.memory_util), percent(s.encoder_util),
                           percent(s.decoder_util), flags, 0);
  last_seen_us_ = std::max<unsigned long long>(last_seen_us_, s.timestamp_us);
  previous_ns_ = at;
  name_process(s.pid, out);
}

void ProcessSampler::name_process(unsigned pid, ProcessFindings& out) {
  if (!named_.insert(pid).second) return;
  container::GpuProcessName named{pid, index_, {}};
  char name[256] = {};
  if (api_.system_get_process_name != nullptr && api_.system_get_process_name(pid, name, sizeof name) == nvml::kSuccess)
    named.name.assign(name, strnlen(name, sizeof name));
  out.names.push_back(std::move(named));
}

}  // namespace gpuscope::gpu
