// Names and descriptions of CUDA error codes, runtime (cudaError_t) and
// driver (CUresult), taken from the real toolkit (see tools/gen_errors.sh).
#pragma once

namespace simgpu {

// nullptr for a code the toolkit does not define.
const char* runtime_error_name(int code);
const char* runtime_error_string(int code);
const char* driver_error_name(int code);
// The driver describes a code in the runtime's words where the codes coincide.
const char* driver_error_string(int code);

}  // namespace simgpu
