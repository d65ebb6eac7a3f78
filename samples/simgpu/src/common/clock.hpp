// Simulated time is CLOCK_MONOTONIC: the device model schedules work at
// absolute monotonic nanoseconds, so a synchronize that waits for modeled
// completion blocks for real and every host-side timer agrees with the model.
#pragma once

#include <cstdint>

namespace simgpu {

int64_t now_ns();
// Blocks the calling thread until now_ns() >= deadline: sleeps most of the way
// with a tight timer slack, then spins the last stretch for precision.
void wait_until(int64_t deadline_ns);
// Host-side cost of an API call: short costs spin (a real driver call burns
// CPU), long ones sleep so CI machines with few cores stay usable.
void spend_host_time(int64_t ns);

inline int64_t us_to_ns(double us) { return static_cast<int64_t>(us * 1000.0); }

}  // namespace simgpu
