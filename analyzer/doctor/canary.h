// doctor --canary: a short active test of one GPU through the CUDA driver
// API (libcuda.so.1, opened with dlopen): copy bandwidth host-to-device and
// device-to-host from pinned and from pageable memory, and the round trip
// of an empty kernel's launch and synchronization. Each copy is sized to
// take about 10 ms on this link (1 to 64 MiB), so a GPU takes a fraction of
// a second; it allocates 64 MiB on the device and twice that on the host,
// and leaves nothing behind.
#pragma once

#include <string>

namespace gpuscope::doctor {

struct CanaryFigures {
  std::string error;  // why the canary could not run (no driver, the GPU refused, ...); empty when it ran
  double h2d_pinned_gbps = 0, d2h_pinned_gbps = 0;      // GB/s (10^9 bytes), best of the repetitions
  double h2d_pageable_gbps = 0, d2h_pageable_gbps = 0;
  double launch_us = 0;      // median of launch + synchronize of an empty kernel
  std::string launch_error;  // why that could not be measured (the copies still count)
  size_t copy_bytes = 0;  // of each timed copy
  int repetitions = 0, launches = 0;
};

// Runs the canary on the CUDA device at `pci_bus_id` ("00000000:18:00.0",
// NVML's), whatever its CUDA ordinal. An error when CUDA does not see it
// (CUDA_VISIBLE_DEVICES) or any step fails.
CanaryFigures run_canary(const std::string& pci_bus_id);

}  // namespace gpuscope::doctor
