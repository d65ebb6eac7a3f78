// Which shared libraries are part of the GPU stack: their dlopen/dlclose
// calls are always recorded (a failed load of one is how a framework
// silently falls back to the CPU).
#pragma once

namespace gpuscope::gpu {

// True when the file name part of `path` (as given to dlopen, or a link
// map's l_name) names a CUDA, NVML, NCCL or CUDA math library. No
// allocation: called from the dlopen hook.
bool is_gpu_library(const char* path) noexcept;

}  // namespace gpuscope::gpu
