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

// With SIMGPU_LOG=1 set, names an entry point simgpu does not model once on
// stderr ("simgpu: NAME is not supported by simgpu (ERROR)"). Thread-safe.
void log_unsupported_once(const char* name, const char* error_name);
// Always (SIMGPU_LOG or not) writes `text` on stderr, once per process and
// name: for refusals a program cannot explain by itself.
void explain_once(const char* name, const char* text);

}  // namespace simgpu
