// simgpu keeps its simulated GPU's activity (what its NVML reports) in a
// shared-memory segment per node, shared by every process on it, and leaves
// it behind by design. Tests that read NVML or verdicts built on it give
// their processes a segment of their own (SIMGPU_SHARED_ID), so other tests'
// simulated kernels running at the same time stay out, and remove it after.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace gpuscope::test {

inline void remove_simgpu_segment(const std::string& shared_id) {
  const std::string suffix = "-" + std::to_string(getuid()) + "-" + shared_id;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("simgpu") && name.ends_with(suffix)) std::filesystem::remove(e.path(), ec);
  }
}

}  // namespace gpuscope::test
