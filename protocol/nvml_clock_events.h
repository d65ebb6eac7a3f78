// NVML's clocks event reasons (nvmlClocksEventReason* bits, nvml.h): why the
// GPU's clocks are below their maximum, and how much each matters. Shared
// by `gpuscope doctor` (the clocks check, now) and `gpuscope analyze` (the
// samples a run recorded), so both name and grade a throttled GPU alike.
#pragma once

#include <cstddef>

namespace gpuscope::nvml {

enum class ClockEventSeverity {
  Info,  // the GPU is not held back against its settings (idle, sync boost)
  Warn,  // software holds the clocks down (power cap, software thermal)
  Fail,  // the hardware does (thermal, power brake): it protects itself
};

struct ClockEventReason {
  unsigned long long bit;
  const char* name;
  ClockEventSeverity severity;
  const char* fix;  // "" for Info
};

inline constexpr ClockEventReason kClockEventReasons[] = {
    {0x1, "GPU idle", ClockEventSeverity::Info, ""},
    {0x2, "applications clocks setting", ClockEventSeverity::Info, ""},
    {0x4, "software power cap", ClockEventSeverity::Warn,
     "the GPU draws its power limit: check the limit (nvidia-smi -q -d POWER; gpuscope doctor's power check) and the "
     "workload's power profile"},
    {0x8, "hardware slowdown", ClockEventSeverity::Fail,
     "the GPU protects itself (too hot, or the power supply signals overload): check cooling, fans and power "
     "cabling; nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER"},
    {0x10, "sync boost", ClockEventSeverity::Info, ""},
    {0x20, "software thermal slowdown", ClockEventSeverity::Warn,
     "the GPU runs above its maximum operating temperature: check airflow and inlet temperature"},
    {0x40, "hardware thermal slowdown", ClockEventSeverity::Fail,
     "the GPU is too hot and the hardware halves its clocks: check cooling, fans, airflow and inlet temperature"},
    {0x80, "hardware power brake slowdown", ClockEventSeverity::Fail,
     "an external power brake (the power supply or chassis) holds the clocks down: check the power supply"},
    {0x100, "display clock setting", ClockEventSeverity::Info, ""},
};
inline constexpr size_t kClockEventReasonCount = sizeof kClockEventReasons / sizeof kClockEventReasons[0];

}  // namespace gpuscope::nvml
